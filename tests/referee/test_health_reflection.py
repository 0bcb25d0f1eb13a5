"""Standard gRPC health checking and server reflection, as deployment tools use them."""

from __future__ import annotations

import grpc
from grpc_health.v1 import health_pb2, health_pb2_grpc
from grpc_reflection.v1alpha import reflection_pb2, reflection_pb2_grpc

from referee_service.server import Referee


async def test_health_reports_serving_for_every_service(referee: Referee) -> None:
    async with grpc.aio.insecure_channel(referee.target) as channel:
        stub = health_pb2_grpc.HealthStub(channel)
        for service in ("", "tienlen.v1.BotGateway", "tienlen.v1.Organizer"):
            response = await stub.Check(health_pb2.HealthCheckRequest(service=service))
            assert response.status == health_pb2.HealthCheckResponse.SERVING, service


async def test_reflection_lists_and_describes_the_protocol(referee: Referee) -> None:
    async with grpc.aio.insecure_channel(referee.target) as channel:
        stub = reflection_pb2_grpc.ServerReflectionStub(channel)

        async def ask(**request: str) -> reflection_pb2.ServerReflectionResponse:
            call = stub.ServerReflectionInfo()
            await call.write(reflection_pb2.ServerReflectionRequest(**request))
            await call.done_writing()
            return await call.read()

        listed = await ask(list_services="")
        names = {s.name for s in listed.list_services_response.service}
        assert {"tienlen.v1.BotGateway", "tienlen.v1.Organizer",
                "grpc.health.v1.Health"} <= names
        described = await ask(file_containing_symbol="tienlen.v1.BotGateway")
        assert described.file_descriptor_response.file_descriptor_proto
