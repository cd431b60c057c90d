/// Why `lecternd` cannot start.
public enum DaemonError: Error, CustomStringConvertible {
    case alreadyRunning(String)
    /// Another process (a lecternd on another bus) holds the library's lock: the library, who holds it.
    case libraryInUse(String, holder: String)

    public var description: String {
        switch self {
        case .alreadyRunning(let detail): return "lecternd is already running on this bus (\(detail))"
        case .libraryInUse(let path, let holder):
            return "lecternd is already running with the library \(path) (\(holder)): stop that one, or give this one another --database"
        }
    }
}

