"""The scheduling service: plans over HTTP, hot-swapped models, Kubernetes extender, decision store.

    app = create_app(Settings(store_url="sqlite:///plans.sqlite"))   # or `dagsched serve`

See `docs/service.md` for the routes with curl examples.
"""
