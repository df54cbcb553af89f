"""MaestroMotif: skills from AI feedback (Klissarov et al., 2024). See docs/maestro.md."""
