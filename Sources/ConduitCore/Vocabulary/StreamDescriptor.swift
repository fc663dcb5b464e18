/// A stream declared at design time, as the stream catalog plugin generates it.
public struct StreamDescriptor: Sendable, Hashable, CustomStringConvertible {
    /// The stream's name in the catalog, used for the generated constant.
    public let name: String
    /// The stream ID both sides use.
    public let streamID: StreamID
    /// The session type the stream is sent with.
    public let type: SessionType
    /// What the stream carries, for people.
    public let summary: String

    /// Makes a descriptor; `id` is not checked here (the catalog plugin checks it at build time).
    public init(name: String, id: Int, type: SessionType, summary: String = "") {
        self.name = name
        self.streamID = StreamID(id)
        self.type = type
        self.summary = summary
    }

    public var description: String { "\(name) (\(streamID), \(type))" }
}
