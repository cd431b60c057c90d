import LecternLibrary
import Threads

/// The library's writes made for clients (LibraryService's methods, import jobs, the retry of unsaved writes), run
/// on the database's writer thread: the ``ThreadExecutor`` the ``BookSession`` runs on, made once by the daemon. A
/// write waits for SQLite there, in order with the session's, and never holds one of the cooperative pool's threads
/// (two on a two-core machine), where the D-Bus handlers and the player run. Reads go to the library's reader
/// threads (``Library/reading(_:)``): the database's readers run beside the writer.
///
/// ```swift
/// let shelf = try await writer.write { try $0.createShelf(named: name, in: nil) }
/// ```
public actor LibraryWriter {
    private let executor: ThreadExecutor
    public nonisolated var unownedExecutor: UnownedSerialExecutor { executor.asUnownedSerialExecutor() }

    private let library: Library

    public init(library: Library, executor: ThreadExecutor) {
        self.library = library
        self.executor = executor
    }

    /// Runs `body` with the library on the writer thread and returns what it returns.
    public func write<T: Sendable>(_ body: @Sendable (Library) throws -> T) rethrows -> T {
        try body(library)
    }
}
