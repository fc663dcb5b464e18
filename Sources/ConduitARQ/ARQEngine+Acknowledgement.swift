/// What a flush or a graceful close asks of the engine: how far the peer has acknowledged a
/// channel, and which frames it has not.
extension ARQEngine {
    /// The sequence the next frame written on `channel` will get: the mark a flush waits for
    /// (every frame below it resolved). 0 for a channel never written on.
    public func sendMark(onChannel channel: UInt32) -> UInt32 {
        sendChannels.read(channel) { $0.nextSequence } ?? 0
    }

    /// Frames on `channel` below `mark` that are neither acknowledged nor given up on: the frames
    /// a flush that took the mark still waits for.
    public func unresolvedFrames(onChannel channel: UInt32, below mark: UInt32) -> Int {
        sendChannels.read(channel) { state -> Int in
            linkSequence(mark, isAfter: state.resolvedBelow) ? Int(mark &- state.resolvedBelow) : 0
        } ?? 0
    }

    /// The first `length` bytes of each frame the engine still holds on `channel` (every channel
    /// when nil) below `mark`, in the order written: the upper layer reads its own headers there
    /// to name the messages that were not acknowledged.
    public func unresolvedFrameHeads(onChannel channel: UInt32?, below mark: UInt32? = nil, length: Int) -> [[UInt8]] {
        var heads: [(channel: UInt32, sequence: UInt32, bytes: [UInt8])] = []
        frames.forEach { _, frame in
            if let channel, frame.channel != channel { return }
            if let mark, !linkSequence(mark, isAfter: frame.sequence) { return }
            heads.append((frame.channel, frame.sequence, Array(frame.payload.prefix(length))))
        }
        heads.sort { $0.channel != $1.channel ? $0.channel < $1.channel : linkSequence($1.sequence, isAfter: $0.sequence) }
        return heads.map(\.bytes)
    }
}
