// Big-endian (network order) loads and stores on raw buffers. Callers check bounds first; these
// helpers never allocate.

extension UnsafeRawBufferPointer {
    @inlinable package func readU8(_ offset: Int) -> UInt8 { self[offset] }

    @inlinable package func readU16(_ offset: Int) -> UInt16 {
        UInt16(bigEndian: loadUnaligned(fromByteOffset: offset, as: UInt16.self))
    }

    @inlinable package func readU32(_ offset: Int) -> UInt32 {
        UInt32(bigEndian: loadUnaligned(fromByteOffset: offset, as: UInt32.self))
    }

    @inlinable package func readU64(_ offset: Int) -> UInt64 {
        UInt64(bigEndian: loadUnaligned(fromByteOffset: offset, as: UInt64.self))
    }
}

extension UnsafeMutableRawBufferPointer {
    @inlinable package func writeU8(_ value: UInt8, at offset: Int) { self[offset] = value }

    @inlinable package func writeU16(_ value: UInt16, at offset: Int) {
        storeBytes(of: value.bigEndian, toByteOffset: offset, as: UInt16.self)
    }

    @inlinable func writeU32(_ value: UInt32, at offset: Int) {
        storeBytes(of: value.bigEndian, toByteOffset: offset, as: UInt32.self)
    }

    @inlinable func writeU64(_ value: UInt64, at offset: Int) {
        storeBytes(of: value.bigEndian, toByteOffset: offset, as: UInt64.self)
    }
}
