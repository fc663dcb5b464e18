public import Logging
import ConduitCore

/// One log line a ``LogCapture`` received, with the handler's and the call site's metadata.
public struct LogEntry: Sendable {
    public var level: Logger.Level
    public var message: String
    public var metadata: [String: String]
}

/// Test support: a `Logger` whose lines are kept, for tests that check what the library logs.
public final class LogCapture: Sendable {
    private let storage = TSanVisibleMutex<[LogEntry]>([])

    public init() {}

    /// Every line so far, in order.
    public var entries: [LogEntry] { storage.withLock { $0 } }

    /// A logger at `trace` whose lines land here.
    public func logger(label: String = "test.conduit") -> Logger {
        var logger = Logger(label: label, factory: { _ in CapturingLogHandler(capture: self) })
        logger.logLevel = .trace
        return logger
    }

    func append(_ entry: LogEntry) { storage.withLock { $0.append(entry) } }
}

/// The handler behind ``LogCapture/logger(label:)``; also for `LoggingSystem.bootstrap`.
public struct CapturingLogHandler: LogHandler {
    let capture: LogCapture
    public var metadata: Logger.Metadata = [:]
    public var metadataProvider: Logger.MetadataProvider?
    public var logLevel: Logger.Level = .trace

    public init(capture: LogCapture) { self.capture = capture }

    public subscript(metadataKey key: String) -> Logger.Metadata.Value? {
        get { metadata[key] }
        set { metadata[key] = newValue }
    }

    public func log(event: LogEvent) {
        let merged = metadata.merging(event.metadata ?? [:]) { $1 }
        capture.append(LogEntry(level: event.level, message: event.message.description, metadata: merged.mapValues { "\($0)" }))
    }
}
