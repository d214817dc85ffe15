"""One training loop for proxies and full runs."""
