"""The "[docs]" links of ``sphinx.ext.viewcode``'s source pages, pointed at the entries that
exist.

viewcode keeps one module path per source module for its links back to the documentation:
the path of the first entry it met (``topo_contrastive.training`` for ``pretrain``,
documented where it is exported). Names of the same source module documented under the
module's own path (``topo_contrastive.training.loop.ContrastiveModel``) then get links
to ``#topo_contrastive.training.ContrastiveModel``, which no page has. This rewrites such a
link to the entry of the same name under the source module's path, where there is one.
"""

from __future__ import annotations

import re
from typing import Any

_BACKLINK = re.compile(r'<a class="viewcode-back" href="([^"#]*)#([^"]+)">')


def _fix(app: Any, pagename: str, templatename: str, context: dict, doctree: Any) -> None:
    if not pagename.startswith("_modules/") or "body" not in context:
        return
    objects = app.env.domains["py"].objects  # documented name -> (docname, node_id, ...)
    module = pagename[len("_modules/") :].replace("/", ".")

    def repoint(m: re.Match) -> str:
        anchor = m.group(2)
        if anchor in objects:
            return m.group(0)
        parts = anchor.split(".")
        for cut in range(1, len(parts)):
            candidate = f"{module}.{'.'.join(parts[cut:])}"
            if candidate in objects:
                entry = objects[candidate]
                href = app.builder.get_relative_uri(pagename, entry.docname)
                return f'<a class="viewcode-back" href="{href}#{entry.node_id}">'
        return m.group(0)

    context["body"] = _BACKLINK.sub(repoint, context["body"])


def setup(app: Any) -> dict[str, Any]:
    app.connect("html-page-context", _fix)
    return {"version": "1.0", "parallel_read_safe": True, "parallel_write_safe": True}
