"""What runs, in which order: the study's configuration, its matrix of cells, repeat planning,
the time estimate, and the fork server that starts each job from a preloaded interpreter."""
