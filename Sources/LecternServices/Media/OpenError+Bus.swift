import DBus
import LecternBooks
import LecternMedia

extension BusError {
    /// The D-Bus error a client reads for what cannot be opened.
    init(_ error: OpenError) {
        switch error.kind {
        case .notFound: self.init(name: "org.freedesktop.DBus.Error.FileNotFound", message: error.message)
        case .invalid: self = .invalidArgs(error.message)
        case .notSupported: self = .notSupported(error.message)
        case .failed: self = .failed(error.message)
        }
    }
}

extension BookOpener {
    /// ``BookOpener/open(_:)`` for a D-Bus method: what cannot be opened is thrown as its ``BusError``.
    func openForClient(_ uris: [String]) async throws {
        do { try await open(uris) } catch let error as OpenError { throw BusError(error) }
    }
}
