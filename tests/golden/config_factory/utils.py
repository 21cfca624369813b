"""Building objects from the config: `{"type": class name, "args": keyword arguments}`."""


def init_obj(module, cfg, *args, **kwargs):
    """`module.<cfg["type"]>(*args, **cfg["args"], **kwargs)`."""
    return getattr(module, cfg["type"])(*args, **cfg["args"], **kwargs)
