"""``python -m gpusparse``: print versions, devices and why a device is unavailable."""

from gpusparse import show_config

show_config()
