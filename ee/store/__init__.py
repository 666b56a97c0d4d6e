"""Memory files: text <-> memory, ids, the files on disk and their lock, feedback events, bulk
import/export, and the repair of what a killed process left."""
