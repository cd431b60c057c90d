import Logging
import Synchronization

/// The daemon's log level, one for all its loggers: the configuration's `log-level`, which a reload changes.
public final class DaemonLogLevel: Sendable {
    private let level: Mutex<Logger.Level>

    public init(_ level: Logger.Level) { self.level = Mutex(level) }

    public var value: Logger.Level {
        get { level.withLock { $0 } }
        set { level.withLock { $0 = newValue } }
    }
}

/// Lines on standard error (the journal, under systemd) at the daemon's log level as it is now.
public struct DaemonLogHandler: LogHandler {
    private var stream: StreamLogHandler
    private let level: DaemonLogLevel
    /// A level set on one logger stays that logger's (the LogHandler contract); the others follow the daemon's.
    private var own: Logger.Level?

    public init(label: String, level: DaemonLogLevel) {
        stream = StreamLogHandler.standardError(label: label)
        stream.logLevel = .trace  // the Logger has checked the level already
        self.level = level
    }

    public var logLevel: Logger.Level {
        get { own ?? level.value }
        set { own = newValue }
    }

    public var metadata: Logger.Metadata {
        get { stream.metadata }
        set { stream.metadata = newValue }
    }

    public var metadataProvider: Logger.MetadataProvider? {
        get { stream.metadataProvider }
        set { stream.metadataProvider = newValue }
    }

    public subscript(metadataKey key: String) -> Logger.Metadata.Value? {
        get { stream[metadataKey: key] }
        set { stream[metadataKey: key] = newValue }
    }

    public func log(event: LogEvent) { stream.log(event: event) }
}
