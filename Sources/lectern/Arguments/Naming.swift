import LecternClient

// Books and shelves as they are typed: an id, or a title (a part of one), or a path of shelves' names.
extension LecternClient {
    /// `resolveShelf`, or 0 (the top level) for nil.
    func resolveShelf(optional text: String?) async throws -> Int64 {
        guard let text else { return 0 }
        return try await resolveShelf(text)
    }

    /// A shelf by id, or by its path of names from the top ("Series/Discworld").
    func resolveShelf(_ text: String) async throws -> Int64 {
        if let id = Int64(text) { return id }
        let shelves = try await shelves()
        var parent: Int64 = 0
        for name in text.split(separator: "/").map(String.init) {
            guard let next = shelves.first(where: { $0.parent == parent && $0.name == name }) else {
                throw CLIError("no shelf \"\(text)\"")
            }
            parent = next.id
        }
        return parent
    }

    /// A book by id, exact title, or a title fragment that matches one book only.
    func resolveBook(_ text: String) async throws -> Int64 {
        if let id = Int64(text) { return id }
        let books = try await self.books(titled: text)
        let lower = text.lowercased()
        if let exact = books.first(where: { $0.title.lowercased() == lower }) { return exact.id }
        let matches = books.filter { $0.title.lowercased().contains(lower) }
        guard matches.count == 1 else {
            throw CLIError(matches.isEmpty ? "no book matches \"\(text)\"" : "\"\(text)\" matches \(matches.count) books: " +
                           matches.prefix(5).map { "[\($0.id)] \($0.title)" }.joined(separator: ", "))
        }
        return matches[0].id
    }

    /// `resolveBook`, or the current book for nil.
    func resolveBookOrCurrent(_ text: String?) async throws -> Int64 {
        if let text { return try await resolveBook(text) }
        let current = try await currentBook()
        guard current != 0 else { throw CLIError("no book is current: name one with --book") }
        return current
    }

    /// The library's one book with this title (and author, when given); an error naming the book otherwise.
    func libraryBook(titled title: String, author: String?) async throws -> Int64 {
        let matches = try await books(titled: title).filter { book in
            book.title == title && (author == nil || book.author == author)
        }
        guard matches.count == 1 else {
            throw CLIError(matches.isEmpty ? "no book “\(title)”\(author.map { " by \($0)" } ?? "") in the library: give --book"
                           : "\(matches.count) books are “\(title)”: give --book")
        }
        return matches[0].id
    }

    /// Every book whose title holds `text` (case-folded), by title.
    private func books(titled text: String) async throws -> [ListedBook] {
        try await search("", BookQuery(title: text)).books
    }
}
