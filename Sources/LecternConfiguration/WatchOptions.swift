/// How the library folders are watched.
public struct WatchOptions: Sendable {
    /// The most folders watched with inotify; those beyond are scanned every ``fallbackScan``.
    public var watchLimit = 8192
    /// How often gone library folders and mounts are looked for.
    public var rootCheck: Duration = .seconds(30)
    /// How often the folders beyond the watch limit are scanned, and the mounts of offline books looked at.
    public var fallbackScan: Duration = .seconds(300)
    /// The longest an activation waits for an import underway that may find its book's files (less than the 10 s
    /// `lectern` waits for a reply).
    public var importWait: Duration = .seconds(8)

    public init() {}
}
