"""Docker-free sandboxes: environments built once, pristine checkouts, throwaway layers, a jail per command."""
