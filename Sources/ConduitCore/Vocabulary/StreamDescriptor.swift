/// A stream declared at design time, as the stream catalog plugin generates it.
public struct StreamDescriptor: Sendable, Hashable, CustomStringConvertible {
    public let name: String
    public let streamID: StreamID
    public let type: SessionType
    public let summary: String

    public init(name: String, id: Int, type: SessionType, summary: String = "") {
        self.name = name
        self.streamID = StreamID(id)
        self.type = type
        self.summary = summary
    }

    public var description: String { "\(name) (\(streamID), \(type))" }
}
