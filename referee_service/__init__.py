"""The gRPC referee: plays Tiến Lên tables between remote bots, authoritatively and fairly."""
