/// The conductor and what serves it: the loop's owner of runs, the request protocols, the store's
/// read side. Every module that uses Baton's runtime sees the engine, the wire, the runtime, the
/// processes and the metrics through it.
@_exported import BatonEngine
@_exported import BatonMetrics
@_exported import BatonProcess
@_exported import BatonRuntime
@_exported import BatonWire
