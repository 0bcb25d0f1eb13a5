"""The spectator and organiser web site (server-rendered pages and the replay viewer)."""
