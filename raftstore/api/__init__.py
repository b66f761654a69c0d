"""The etcd v3 gRPC front of a raftstore member: one servicer module per etcd service."""
