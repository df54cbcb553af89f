"""Run specs, one-cell runs, grids, runners, records, aggregation and leaderboards."""
