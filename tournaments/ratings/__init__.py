"""Rating maths: multiplayer Elo (sequential, per pool) and Plackett-Luce (order-free)."""
