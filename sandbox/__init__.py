"""Everything that touches untrusted code: backends, the in-sandbox harness and the wire protocol.

`sandbox` never imports `service`; the harness imports nothing of ours but `sandbox.wire`.
"""
