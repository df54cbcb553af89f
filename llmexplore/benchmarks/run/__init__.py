"""One run: its spec and resolution, the cell that trains or resumes it, and its record."""
