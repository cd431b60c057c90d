import GRDB

/// The schema, as named, append-only migrations: never edit a registered one, add the next.
/// The rules live in the schema: NOT NULL, CHECKs, foreign keys with cascades.
enum Schema {
    static var migrator: DatabaseMigrator {
        var migrator = DatabaseMigrator()
        migrator.registerMigration("v1: shelves, books, files, chapters, bookmarks") { db in
            try db.create(table: "shelf") { t in
                t.autoIncrementedPrimaryKey("id")
                t.column("parentId", .integer).references("shelf", onDelete: .cascade)
                t.column("name", .text).notNull()
                t.check(sql: "length(trim(name)) > 0 AND length(name) <= \(Limits.name)")
                t.check(sql: "parentId IS NULL OR parentId <> id")
            }
            try db.execute(sql: "CREATE UNIQUE INDEX shelf_name ON shelf(ifnull(parentId, 0), name)")

            try db.create(table: "book") { t in
                t.autoIncrementedPrimaryKey("id")
                t.column("shelfId", .integer).references("shelf", onDelete: .restrict).indexed()
                t.column("title", .text).notNull()
                t.column("author", .text)
                t.column("narrator", .text)
                t.column("coverPath", .text)
                t.column("sourcePath", .text)
                t.column("albumKey", .text).notNull().defaults(to: "")
                t.column("addedAt", .datetime).notNull()
                t.column("modifiedAt", .datetime).notNull()
                t.column("lastPlayedAt", .datetime)
                t.column("finished", .boolean).notNull().defaults(to: false)
                t.column("note", .text).notNull().defaults(to: "")
                t.column("volume", .double).notNull().defaults(to: 1)
                t.column("speed", .double).notNull().defaults(to: 1)
                t.column("shuffle", .boolean).notNull().defaults(to: false)
                t.column("loop", .text).notNull().defaults(to: "None")
                t.column("positionFileId", .integer)  // a file of this book; checked by a trigger
                t.column("positionOffset", .integer).notNull().defaults(to: 0)
                t.column("userOrder", .integer).notNull().defaults(to: 0)
                t.check(sql: "length(trim(title)) > 0 AND length(title) <= \(Limits.name)")
                t.check(sql: "volume >= 0 AND volume <= 10")
                t.check(sql: "speed >= 0.5 AND speed <= 3.0")
                t.check(sql: "loop IN ('None', 'Track', 'Playlist')")
                t.check(sql: "positionOffset >= 0")
                t.check(sql: "length(note) <= \(Limits.note)")
            }
            try db.execute(sql: "CREATE UNIQUE INDEX book_source ON book(sourcePath, albumKey) WHERE sourcePath IS NOT NULL")

            try db.create(table: "bookFile") { t in
                t.autoIncrementedPrimaryKey("id")
                t.column("bookId", .integer).notNull().references("book", onDelete: .cascade)
                t.column("path", .text).notNull()
                t.column("position", .integer).notNull()
                t.column("duration", .integer)
                t.column("title", .text)
                t.column("artist", .text)
                t.column("album", .text)
                t.column("albumArtist", .text)
                t.column("composer", .text)
                t.column("genre", .text)
                t.column("trackNumber", .integer)
                t.column("discNumber", .integer)
                t.column("available", .boolean).notNull().defaults(to: true)
                t.uniqueKey(["bookId", "path"])
            }
            try db.create(index: "bookFile_order", on: "bookFile", columns: ["bookId", "position"])

            try db.create(table: "chapter") { t in
                t.autoIncrementedPrimaryKey("id")
                t.column("fileId", .integer).notNull().references("bookFile", onDelete: .cascade).indexed()
                t.column("position", .integer).notNull()
                t.column("title", .text).notNull()
                t.column("start", .integer).notNull()
                t.column("end", .integer)
                t.check(sql: "start >= 0 AND (\"end\" IS NULL OR \"end\" >= start)")
            }

            try db.create(table: "bookmark") { t in
                t.autoIncrementedPrimaryKey("id")
                t.column("bookId", .integer).notNull().references("book", onDelete: .cascade).indexed()
                // A file is never deleted while its book exists (gone files are marked unavailable).
                t.column("fileId", .integer).notNull().references("bookFile", onDelete: .cascade)
                t.column("offset", .integer).notNull()
                t.column("title", .text).notNull()
                t.column("note", .text).notNull().defaults(to: "")
                t.column("createdAt", .datetime).notNull()
                t.column("kind", .text).notNull().defaults(to: "user")
                t.check(sql: "offset >= 0")
                t.check(sql: "length(title) <= \(Limits.name) AND length(note) <= \(Limits.note)")
                t.check(sql: "kind IN ('user', 'sleepTimer', 'unplug')")
            }

            try db.create(table: "setting") { t in
                t.primaryKey("key", .text)
                t.column("value", .text).notNull()
            }

            // A position or bookmark names a file of its own book.
            try db.execute(sql: """
                CREATE TRIGGER book_position_file BEFORE UPDATE OF positionFileId ON book
                WHEN NEW.positionFileId IS NOT NULL
                 AND NOT EXISTS (SELECT 1 FROM bookFile WHERE id = NEW.positionFileId AND bookId = NEW.id)
                BEGIN SELECT RAISE(ABORT, 'the position names a file of another book'); END;
                CREATE TRIGGER bookmark_file BEFORE INSERT ON bookmark
                WHEN NOT EXISTS (SELECT 1 FROM bookFile WHERE id = NEW.fileId AND bookId = NEW.bookId)
                BEGIN SELECT RAISE(ABORT, 'the bookmark names a file of another book'); END;
                """)
        }
        migrator.registerMigration("v2: indexes for the playlist orderings") { db in
            // Pages of GetPlaylists and the next user order of an import read these instead of scanning every book.
            try db.execute(sql: """
                CREATE INDEX book_title ON book(title COLLATE NOCASE, id);
                CREATE INDEX book_added ON book(addedAt, id);
                CREATE INDEX book_modified ON book(modifiedAt, id);
                CREATE INDEX book_played ON book(lastPlayedAt, id);
                CREATE INDEX book_user_order ON book(userOrder, id);
                """)
        }
        migrator.registerMigration("v3: a book's shuffled play order") { db in
            try db.alter(table: "book") { t in
                t.add(column: "shuffleOrder", .text).notNull().defaults(to: "")
            }
        }
        return migrator
    }
}

/// Sizes the schema and the API enforce.
public enum Limits {
    /// Names and titles, in characters.
    public static let name = 1024
    /// Notes, in characters.
    public static let note = 100_000
}
