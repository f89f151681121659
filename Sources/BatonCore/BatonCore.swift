/// The runtime around the engine: the loop, workers, processes, cgroups and the wire codec. Every
/// module that uses Baton's runtime sees the engine's values and decisions through it.
@_exported import BatonEngine
