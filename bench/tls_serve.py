"""The TLS suite's Python side for the servers started in-process:

    <venv>/bin/python bench/tls_serve.py ferroloop|ferroloop-base|cadeloop PORT CERTFILE KEYFILE

Runs `http_app.app` over TLS on 127.0.0.1:PORT until SIGTERM, printing
`http_serve.py`'s SERVE_MODULE line first (the harness checks where the
server was imported from).  ferroloop takes uvicorn's `ssl_certfile` /
`ssl_keyfile`; cadeloop takes an `ssl.SSLContext` (`serve(ssl=...)`).
"""

from __future__ import annotations

import importlib
import json
import ssl
import sys

from http_serve import MODULE_LINE, SERVE_MODULES


def main() -> int:
    if len(sys.argv) != 5 or sys.argv[1] not in SERVE_MODULES:
        print(__doc__, file=sys.stderr)
        return 2
    name, port, certfile, keyfile = sys.argv[1], int(sys.argv[2]), sys.argv[3], sys.argv[4]
    app = importlib.import_module("http_app").app
    module = importlib.import_module(SERVE_MODULES[name])
    print(MODULE_LINE + json.dumps({"module_file": module.__file__}), flush=True)
    if name == "cadeloop":
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        context.load_cert_chain(certfile, keyfile)
        module.serve(app, host="127.0.0.1", port=port, access_log=False, ssl=context)
    else:
        module.serve(
            app,
            host="127.0.0.1",
            port=port,
            access_log=False,
            ssl_certfile=certfile,
            ssl_keyfile=keyfile,
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
