"""Generated protobuf / gRPC modules of the etcd v3 API (see scripts/gen_proto.sh).

``kv_pb2`` is etcd's ``mvccpb`` package, ``rpc_pb2`` / ``rpc_pb2_grpc`` its ``etcdserverpb``.
Field numbers are etcd v3.4's, so stock etcd clients interoperate.
"""
