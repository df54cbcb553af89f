"""From run records to tables: aggregation, statistics, comparisons, leaderboards and plots."""
