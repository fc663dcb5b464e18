#if !SRTP
import ConduitCore
import NIOCore

// This build has no libsrtp2 (the package trait `SRTP` is off). The SRTP options are still known,
// so a URL that asks for SRTP gets an error that says how to get it, never a link in the clear.
// The types below are never made (their initialisers fail or are private), so no datagram is ever
// "protected" here.

/// SRTP settings of a link; never made without the `SRTP` trait.
struct UDPSRTPConfiguration: Sendable {
    /// Always an error: this build cannot protect a link.
    init(_ settings: UDPTransport.Configuration.SRTP, keyText: () throws(ConduitError) -> String) throws(ConduitError) {
        throw ConduitError(
            .unsupportedByTransport,
            "srtp: this build of Conduit has no SRTP; enable the package trait SRTP (needs libsrtp2, Debian: libsrtp2-dev)"
        )
    }

    func makeFilter(isClient: Bool) throws(ConduitError) -> UDPSRTPFilter { UDPSRTPFilter() }
}

/// A socket's SRTP filter; never made without the `SRTP` trait. Were one made, it would refuse
/// every datagram both ways: nothing goes out or comes in unprotected by mistake.
final class UDPSRTPFilter {
    fileprivate init() {}
    var wireCode: UInt8 { 0 }
    func protect(_ buffer: ByteBuffer, allocator: ByteBufferAllocator) -> ByteBuffer? { nil }
    func unprotect(_ buffer: ByteBuffer) -> Result<ByteBuffer, UDPSRTPRejection> { .failure(UDPSRTPRejection()) }
}

struct UDPSRTPRejection: Error {}

extension UDPControlMessage {
    /// The message as it goes on the wire (no SRTP in this build).
    func datagram(sealedWith srtp: NIOLoopBoundBox<UDPSRTPFilter>?, allocator: ByteBufferAllocator) -> ByteBuffer? {
        var buffer = allocator.buffer(capacity: 48)
        write(into: &buffer)
        return buffer
    }
}
#endif
