/// The runtime around the engine: the loop, workers, processes, cgroups and metrics. Every module
/// that uses Baton's runtime sees the engine's values and decisions, and the wire's, through it.
@_exported import BatonEngine
@_exported import BatonWire
