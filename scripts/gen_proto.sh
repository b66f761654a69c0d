#!/bin/sh
# Regenerate the Python modules of raftstore/api/pb from the .proto files; the generated
# modules are committed so that installing the package needs no protoc.
#
# The generated code refuses to load on a protobuf runtime older than the protoc that made it
# (and a grpcio older than the grpcio-tools). The committed modules were made with
# grpcio-tools 1.74.0 (protoc 6.31.1): runtime needs protobuf>=6.31.1 and grpcio>=1.74.0.
# Regenerating with a newer grpcio-tools raises those floors; set PYTHON to an interpreter
# with grpcio-tools==1.74.0 to keep them.
set -eu
cd "$(dirname "$0")/.."
PYTHON="${PYTHON:-.venv/bin/python}"
"$PYTHON" -m grpc_tools.protoc -I. \
    --python_out=. --grpc_python_out=. --pyi_out=. \
    raftstore/api/pb/kv.proto raftstore/api/pb/rpc.proto
