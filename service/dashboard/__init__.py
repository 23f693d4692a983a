"""The assignment dashboard (issue #23): what the class got wrong, from the stored reports."""
