"""The pure rules of worlds_awakening (`core`)."""
