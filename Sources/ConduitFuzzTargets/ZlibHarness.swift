#if Zlib
import Conduit
import ConduitRooms

extension FuzzTargets {
    /// The labeled channels' inflater: a compressed message of any bytes inflates to at most the
    /// channel's limit or is refused (nil); what inflates compresses and inflates back equal.
    static let zlibInflate = FuzzTarget(
        name: "zlib-inflate",
        summary: "Zlib.decompress bounded by ChannelFrameHeader.maxMessageBytes; compress/decompress round trip"
    ) { (input) throws(FuzzFailure) in
        let check = Invariants(target: "zlib-inflate")
        let limit = ChannelFrameHeader.maxMessageBytes
        guard let inflated = Zlib.decompress(Array(input), limit: limit) else { return false }
        try check.require(inflated.count <= limit, "inflated to \(inflated.count) bytes, limit \(limit)")
        try check.require(Zlib.decompress(Zlib.compress(inflated), limit: limit) == inflated, "compressing what inflated does not round-trip")
        return true
    }
}
#endif
