"""The decision layer over gRPC: `dagsched.proto`, its generated stubs (`make grpc-stubs`), the server beside the
HTTP API (`server`) and a small client (`client`)."""
