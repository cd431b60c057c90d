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
        migrator.registerMigration("v4: the current book, a row that goes with its book") { db in
            // One row at most; deleting the book deletes it.
            try db.create(table: "currentBook") { t in
                t.primaryKey("id", .integer).check { $0 == 1 }
                t.column("bookId", .integer).notNull().references("book", onDelete: .cascade)
            }
            try db.execute(sql: """
                INSERT INTO currentBook(id, bookId)
                SELECT 1, book.id FROM setting JOIN book ON book.id = CAST(setting.value AS INTEGER)
                WHERE setting.key = 'currentBook';
                DELETE FROM setting WHERE key = 'currentBook';
                """)
        }
        migrator.registerMigration("v5: a book's shuffled play order as rows") { db in
            // Each file of the book once, at its place in the order; deleting the file or the book takes it out.
            try db.create(table: "shuffledFile") { t in
                t.column("bookId", .integer).notNull().references("book", onDelete: .cascade)
                t.column("position", .integer).notNull()
                t.column("fileId", .integer).notNull().unique().references("bookFile", onDelete: .cascade)
                t.primaryKey(["bookId", "position"])
                t.check(sql: "position >= 0")
            }
            try db.execute(sql: """
                CREATE TRIGGER shuffledFile_file BEFORE INSERT ON shuffledFile
                WHEN NOT EXISTS (SELECT 1 FROM bookFile WHERE id = NEW.fileId AND bookId = NEW.bookId)
                BEGIN SELECT RAISE(ABORT, 'the shuffled order names a file of another book'); END;
                """)
            // The text column's ids, less those of no file of the book and repeats, numbered again from 0.
            let orders = try Row.fetchAll(db, sql: "SELECT id, shuffleOrder FROM book WHERE shuffleOrder <> ''")
            for order in orders {
                let book: Int64 = order["id"]
                let text: String = order["shuffleOrder"]
                let files = Set(try Int64.fetchAll(db, sql: "SELECT id FROM bookFile WHERE bookId = ?", arguments: [book]))
                var seen = Set<Int64>()
                let kept = text.split(separator: ",").compactMap { Int64($0) }.filter { files.contains($0) && seen.insert($0).inserted }
                for (position, file) in kept.enumerated() {
                    try db.execute(sql: "INSERT INTO shuffledFile(bookId, position, fileId) VALUES (?, ?, ?)",
                                   arguments: [book, position, file])
                }
            }
            try db.execute(sql: "ALTER TABLE book DROP COLUMN shuffleOrder")
        }
        migrator.registerMigration("v6: a book's loop in Lectern's words") { db in
            // A CHECK can't be altered: the table is made again with the new one (SQLite's twelve steps; the
            // migrator turns foreign keys off and checks them at the end), its indexes and trigger with it, and
            // AUTOINCREMENT's counter, so that the id of a book deleted before is still never given again.
            try db.execute(sql: """
                CREATE TABLE newBook (
                  id INTEGER PRIMARY KEY AUTOINCREMENT,
                  shelfId INTEGER REFERENCES shelf(id) ON DELETE RESTRICT,
                  title TEXT NOT NULL,
                  author TEXT,
                  narrator TEXT,
                  coverPath TEXT,
                  sourcePath TEXT,
                  albumKey TEXT NOT NULL DEFAULT '',
                  addedAt DATETIME NOT NULL,
                  modifiedAt DATETIME NOT NULL,
                  lastPlayedAt DATETIME,
                  finished BOOLEAN NOT NULL DEFAULT 0,
                  note TEXT NOT NULL DEFAULT '',
                  volume DOUBLE NOT NULL DEFAULT 1,
                  speed DOUBLE NOT NULL DEFAULT 1,
                  shuffle BOOLEAN NOT NULL DEFAULT 0,
                  loop TEXT NOT NULL DEFAULT 'none',
                  positionFileId INTEGER,
                  positionOffset INTEGER NOT NULL DEFAULT 0,
                  userOrder INTEGER NOT NULL DEFAULT 0,
                  CHECK (length(trim(title)) > 0 AND length(title) <= \(Limits.name)),
                  CHECK (volume >= 0 AND volume <= 10),
                  CHECK (speed >= 0.5 AND speed <= 3.0),
                  CHECK (loop IN ('none', 'chapter', 'book')),
                  CHECK (positionOffset >= 0),
                  CHECK (length(note) <= \(Limits.note))
                );
                INSERT INTO newBook
                SELECT id, shelfId, title, author, narrator, coverPath, sourcePath, albumKey, addedAt, modifiedAt,
                       lastPlayedAt, finished, note, volume, speed, shuffle,
                       CASE loop WHEN 'Track' THEN 'chapter' WHEN 'Playlist' THEN 'book' ELSE 'none' END,
                       positionFileId, positionOffset, userOrder
                FROM book;
                DELETE FROM sqlite_sequence WHERE name = 'newBook';
                INSERT INTO sqlite_sequence(name, seq) SELECT 'newBook', seq FROM sqlite_sequence WHERE name = 'book';
                DROP TABLE book;
                ALTER TABLE newBook RENAME TO book;
                CREATE INDEX book_on_shelfId ON book(shelfId);
                CREATE UNIQUE INDEX book_source ON book(sourcePath, albumKey) WHERE sourcePath IS NOT NULL;
                CREATE INDEX book_title ON book(title COLLATE NOCASE, id);
                CREATE INDEX book_added ON book(addedAt, id);
                CREATE INDEX book_modified ON book(modifiedAt, id);
                CREATE INDEX book_played ON book(lastPlayedAt, id);
                CREATE INDEX book_user_order ON book(userOrder, id);
                CREATE TRIGGER book_position_file BEFORE UPDATE OF positionFileId ON book
                WHEN NEW.positionFileId IS NOT NULL
                 AND NOT EXISTS (SELECT 1 FROM bookFile WHERE id = NEW.positionFileId AND bookId = NEW.id)
                BEGIN SELECT RAISE(ABORT, 'the position names a file of another book'); END;
                """)
        }
        // Self-contained: it needs only v1's bookFile, whatever other migrations ran between.
        migrator.registerMigration("v8: file fingerprints") { db in
            // A file's identity is its content (FileFingerprint): a book whose files were renamed or moved is found
            // again by them. Size and modification time say whether a file changed since it was read (an import
            // skips it then). NULL until the file is next read by an import.
            try db.alter(table: "bookFile") { t in
                t.add(column: "size", .integer)
                t.add(column: "modified", .integer)
                t.add(column: "fingerprint", .text)
            }
            try db.execute(sql: """
                CREATE INDEX bookFile_fingerprint ON bookFile(fingerprint) WHERE fingerprint IS NOT NULL;
                CREATE INDEX bookFile_path ON bookFile(path);
                """)
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
