#if SRTP
/// Standard base64 (RFC 4648 section 4, with padding), written out to keep the target free of
/// Foundation.
enum Base64 {
    private static let alphabet = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/".utf8)

    static func encode(_ bytes: [UInt8]) -> String {
        var out: [UInt8] = []
        out.reserveCapacity((bytes.count + 2) / 3 * 4)
        var index = 0
        while index < bytes.count {
            let remaining = bytes.count - index
            let b0 = UInt32(bytes[index])
            let b1 = remaining > 1 ? UInt32(bytes[index + 1]) : 0
            let b2 = remaining > 2 ? UInt32(bytes[index + 2]) : 0
            let word = b0 << 16 | b1 << 8 | b2
            out.append(alphabet[Int(word >> 18 & 63)])
            out.append(alphabet[Int(word >> 12 & 63)])
            out.append(remaining > 1 ? alphabet[Int(word >> 6 & 63)] : UInt8(ascii: "="))
            out.append(remaining > 2 ? alphabet[Int(word & 63)] : UInt8(ascii: "="))
            index += 3
        }
        return String(decoding: out, as: UTF8.self)
    }

    private static func value(of character: UInt8) -> UInt32? {
        switch character {
        case UInt8(ascii: "A")...UInt8(ascii: "Z"): UInt32(character - UInt8(ascii: "A"))
        case UInt8(ascii: "a")...UInt8(ascii: "z"): UInt32(character - UInt8(ascii: "a")) + 26
        case UInt8(ascii: "0")...UInt8(ascii: "9"): UInt32(character - UInt8(ascii: "0")) + 52
        case UInt8(ascii: "+"): 62
        case UInt8(ascii: "/"): 63
        default: nil
        }
    }

    /// The bytes of `text`, or nil unless it is canonical padded base64 (length a multiple of 4, at
    /// most two `=` and only at the end, unused bits zero).
    static func decode(_ text: some StringProtocol) -> [UInt8]? {
        let chars = Array(text.utf8)
        guard chars.count % 4 == 0 else { return nil }
        var out: [UInt8] = []
        out.reserveCapacity(chars.count / 4 * 3)
        var index = 0
        while index < chars.count {
            let isLast = index + 4 == chars.count
            let padding = isLast ? chars[(index + 2)...].reversed().prefix { $0 == UInt8(ascii: "=") }.count : 0
            var word: UInt32 = 0
            for offset in 0..<4 {
                let character = chars[index + offset]
                if offset >= 4 - padding {
                    word <<= 6
                    continue
                }
                guard let sextet = value(of: character) else { return nil }
                word = word << 6 | sextet
            }
            out.append(UInt8(word >> 16 & 0xFF))
            if padding < 2 { out.append(UInt8(word >> 8 & 0xFF)) } else if word & 0xFFFF != 0 { return nil }
            if padding < 1 { out.append(UInt8(word & 0xFF)) } else if word & 0xFF != 0 { return nil }
            index += 4
        }
        return out
    }
}
#endif
