#if Zlib
import CZlib
#endif

/// zlib format (RFC 1950) compression for labeled channels declared with `compress`, as Sora
/// does. Decompression is bounded: a message that would inflate past `limit` is refused (counted
/// by the caller), so a small frame cannot make the receiver allocate without bound.
///
/// Without the package trait `Zlib` there is no zlib: joining with a channel declared with
/// `compress` is refused, and a compressed message that arrives anyway is refused and counted.
package enum Zlib {
    #if Zlib
    package static let isAvailable = true

    package static func compress(_ bytes: [UInt8]) -> [UInt8] {
        var length = compressBound(uLong(bytes.count))
        var out = [UInt8](repeating: 0, count: Int(length))
        let status = out.withUnsafeMutableBufferPointer { destination in
            bytes.withUnsafeBufferPointer { source in
                compress2(destination.baseAddress, &length, source.baseAddress, uLong(source.count), Z_DEFAULT_COMPRESSION)
            }
        }
        precondition(status == Z_OK, "compress2 failed with \(status) despite compressBound")
        out.removeSubrange(Int(length)...)
        return out
    }

    package static func decompress(_ bytes: [UInt8], limit: Int) -> [UInt8]? {
        guard !bytes.isEmpty else { return nil }
        var length = uLong(limit)
        var out = [UInt8](repeating: 0, count: limit)
        let status = out.withUnsafeMutableBufferPointer { destination in
            bytes.withUnsafeBufferPointer { source in
                uncompress(destination.baseAddress, &length, source.baseAddress, uLong(source.count))
            }
        }
        guard status == Z_OK else { return nil }
        out.removeSubrange(Int(length)...)
        return out
    }
    #else
    package static let isAvailable = false

    package static func compress(_ bytes: [UInt8]) -> [UInt8] {
        preconditionFailure("unreachable: join refuses channels declared with compress when zlib is left out")
    }

    package static func decompress(_ bytes: [UInt8], limit: Int) -> [UInt8]? { nil }
    #endif
}
