import Threads

extension Library {
    /// The threads the library's reads run on for async callers (``reading(_:)``).
    ///
    /// Four: two cores run two reads at a time, and two more let a short read (a book's details) go by two long ones
    /// (a page of 200 books sorted among 10,000, a search) instead of waiting for one to end. Fewer than the database
    /// pool's five reader connections (GRDB's default), so that a read on one of these threads finds a connection
    /// free beside one made elsewhere (the book session's, on the writer's thread).
    static let readers = ThreadPool(name: "lectern-read", threads: 4)

    /// Runs `body` with the library on one of the library's reader threads (`lectern-read`) and returns what it
    /// returns: a read made from a task or an actor waits for SQLite and the disk there, holding none of the
    /// cooperative pool's threads. Each of the library's calls in `body` is a read transaction of its own, on one of
    /// the database's reader connections; the writes go on meanwhile on theirs.
    ///
    /// ```swift
    /// let page = try await library.reading { try $0.books(in: nil, recursive: true, sortedBy: .title, offset: 0, limit: 50) }
    /// ```
    public nonisolated(nonsending) func reading<T: Sendable, E: Error>(_ body: @escaping @Sendable (Library) throws(E) -> T) async throws(E) -> T {
        try await Self.readers.run { () throws(E) -> T in try body(self) }
    }
}
