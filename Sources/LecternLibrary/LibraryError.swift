/// Why a library operation was refused. Nothing was changed: every operation is one transaction.
public enum LibraryError: Error, Equatable, Sendable, CustomStringConvertible {
    case notFound(String)
    case invalidArgument(String)
    /// The database can't be written (read-only, full disk, locked); reads may still work.
    case unavailable(String)

    /// The database can't be written now (``unavailable(_:)``).
    public var isUnavailable: Bool {
        if case .unavailable = self { return true }
        return false
    }

    public var description: String {
        switch self {
        case .notFound(let message), .invalidArgument(let message), .unavailable(let message): return message
        }
    }
}
