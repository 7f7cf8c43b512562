// `Shared` is the portable core used by agent, server and recordctl. It is split into
// role modules so each layer builds and tests on its own:
//   MP4          ISO BMFF boxes, the N-track muxer, the box reader, recovery
//   WireProtocol the agent↔server framed protocol (sans-I/O codec)
@_exported import MP4
@_exported import WireProtocol
