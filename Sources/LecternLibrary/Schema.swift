import Foundation
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
        migrator.registerMigration("v7: full-text search") { db in
            // One row of `bookSearch` per book (its rowid the book's id): what a search looks in, folded by the
            // tokenizer (case and accents: "bronte" finds "Brontë"), with prefixes of 2 and 3 characters indexed.
            // Several values of a column (a book's files' artists) are joined with U+001F, which no search crosses.
            // `bookTags` holds the columns Find's substring filters read, narrow to scan, so that they need no look
            // into the files.
            try db.execute(sql: """
                CREATE TABLE bookTags(bookId INTEGER PRIMARY KEY, author TEXT, album TEXT, composer TEXT, genre TEXT);
                CREATE VIRTUAL TABLE bookSearch USING fts5(
                  title, author, narrator, series, album, composer, genre, files, notes,
                  tokenize = 'unicode61 remove_diacritics 2', prefix = '2 3');
                CREATE VIEW bookSearchText AS
                SELECT b.id, b.title,
                  (SELECT group_concat(v, char(31)) FROM (SELECT b.author AS v UNION SELECT artist FROM bookFile WHERE bookId = b.id
                                                          UNION SELECT albumArtist FROM bookFile WHERE bookId = b.id)) AS author,
                  b.narrator,
                  (WITH RECURSIVE up(id, parentId, name) AS (
                     SELECT id, parentId, name FROM shelf WHERE id = b.shelfId
                     UNION ALL SELECT s.id, s.parentId, s.name FROM shelf s JOIN up ON s.id = up.parentId)
                   SELECT group_concat(name, char(31)) FROM up) AS series,
                  (SELECT group_concat(v, char(31)) FROM (SELECT DISTINCT album AS v FROM bookFile WHERE bookId = b.id)) AS album,
                  (SELECT group_concat(v, char(31)) FROM (SELECT DISTINCT composer AS v FROM bookFile WHERE bookId = b.id)) AS composer,
                  (SELECT group_concat(v, char(31)) FROM (SELECT DISTINCT genre AS v FROM bookFile WHERE bookId = b.id)) AS genre,
                  (SELECT group_concat(title, char(31)) FROM bookFile WHERE bookId = b.id) AS files,
                  (SELECT group_concat(v, char(31)) FROM (SELECT b.note AS v UNION ALL SELECT title FROM bookmark WHERE bookId = b.id
                                                          UNION ALL SELECT note FROM bookmark WHERE bookId = b.id)) AS notes
                FROM book b;
                INSERT INTO bookSearch(rowid, title, author, narrator, series, album, composer, genre, files, notes)
                SELECT * FROM bookSearchText;
                INSERT INTO bookTags SELECT rowid, author, album, composer, genre FROM bookSearch;
                """)
            // The shelves at and below each shelf, for the trigger of a shelf (a trigger can't hold a WITH).
            try db.execute(sql: """
                CREATE VIEW shelfTree AS
                WITH RECURSIVE below(top, id) AS (SELECT id, id FROM shelf
                                                  UNION ALL SELECT below.top, shelf.id FROM shelf JOIN below ON shelf.parentId = below.id)
                SELECT top, id FROM below;
                """)
            // A book whose row of `bookDeferred` exists (a write of many of its files: an import) is skipped by the
            // triggers of its files; deleting the row makes its index rows and progress once.
            try db.execute(sql: "CREATE TABLE bookDeferred(bookId INTEGER PRIMARY KEY)")
            try db.execute(sql: searchTriggers(remake: remakeTwice))

            // How far through each book its place is (0 to 1; 1 once finished), kept in the row to sort by it: the
            // files' durations before the place's file, plus its offset, over the whole duration.
            try db.execute(sql: """
                ALTER TABLE book ADD COLUMN progress DOUBLE NOT NULL DEFAULT 0;
                CREATE VIEW bookProgress AS
                SELECT b.id, CASE WHEN b.finished THEN 1.0 ELSE ifnull(min(1.0,
                         (ifnull((SELECT sum(f.duration) FROM bookFile f JOIN bookFile p ON p.id = b.positionFileId
                                  WHERE f.bookId = b.id AND f.position < p.position), 0) + b.positionOffset) * 1.0
                         / (SELECT sum(duration) FROM bookFile WHERE bookId = b.id)), 0) END AS progress
                FROM book b;
                UPDATE book SET progress = (SELECT progress FROM bookProgress WHERE id = book.id);
                """)
            try db.execute(sql: progressTriggers(remake: remakeTwice))

            // Orders of listings the database reads in an index instead of sorting every book: by author (books
            // without one last), by when played (never-played ones together at one end), by progress.
            try db.execute(sql: """
                DROP INDEX book_played;
                CREATE INDEX book_played ON book(lastPlayedAt IS NOT NULL, lastPlayedAt, id);
                CREATE INDEX book_author ON book(author IS NULL, author COLLATE NOCASE, title COLLATE NOCASE, id);
                CREATE INDEX book_progress ON book(progress, id);
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
        migrator.registerMigration("v9: missing files, offline books, one search row") { db in
            // A book is offline while the file system its folder is on is not mounted, or the library folder it is in
            // is gone: its files are neither present nor missing, and nothing it has changes until they are back.
            // The mount is where its folder was when last imported (NULL: not known yet, never offline by it).
            // (A file's own state, present or missing, is bookFile.available since v1.)
            try db.alter(table: "book") { t in
                t.add(column: "offline", .boolean).notNull().defaults(to: false)
                t.add(column: "mountPath", .text)
            }
            // The missing files, few, counted without reading every file.
            try db.execute(sql: "CREATE INDEX bookFile_missing ON bookFile(bookId) WHERE NOT available")
            // The search triggers made each book's row twice, once for bookSearch and once for bookTags: bookTags
            // now copies the row just made.
            let triggers = ["bookSearch_bookInserted", "bookSearch_bookDeleted", "bookSearch_bookUpdated", "bookSearch_fileInserted",
                            "bookSearch_fileDeleted", "bookSearch_fileUpdated", "bookSearch_bookmarkInserted",
                            "bookSearch_bookmarkDeleted", "bookSearch_bookmarkUpdated", "bookSearch_shelfUpdated",
                            "bookProgress_placeChanged", "bookProgress_fileInserted", "bookProgress_fileDeleted",
                            "bookProgress_fileUpdated", "bookDeferred_done"]
            try db.execute(sql: triggers.map { "DROP TRIGGER \($0);" }.joined(separator: "\n"))
            try db.execute(sql: searchTriggers(remake: remakeOnce))
            try db.execute(sql: progressTriggers(remake: remakeOnce))
        }
        migrator.registerMigration("v10: listening history and undo") { db in
            // Listening sessions (SessionTracker): the open one's row is updated at each of the player's ticks. A
            // deleted book's sessions stay in the history, with its title.
            try db.execute(sql: """
                CREATE TABLE listeningSession (
                  id INTEGER PRIMARY KEY AUTOINCREMENT,
                  bookId INTEGER REFERENCES book(id) ON DELETE SET NULL,
                  title TEXT NOT NULL,
                  startedAt DATETIME NOT NULL,
                  endedAt DATETIME NOT NULL,
                  fromPosition INTEGER NOT NULL,
                  toPosition INTEGER NOT NULL,
                  listened INTEGER NOT NULL,
                  content INTEGER NOT NULL,
                  speed DOUBLE NOT NULL,
                  CHECK (fromPosition >= 0 AND toPosition >= fromPosition AND listened >= 0 AND content >= 0),
                  CHECK (speed >= 0.5 AND speed <= 3.0 AND endedAt >= startedAt)
                );
                CREATE INDEX listeningSession_started ON listeningSession(startedAt);
                CREATE INDEX listeningSession_book ON listeningSession(bookId, startedAt);
                """)
            // When each book was finished: a row each time it is marked finished (a book heard twice, twice).
            try db.execute(sql: """
                CREATE TABLE finishedBook (
                  id INTEGER PRIMARY KEY AUTOINCREMENT,
                  bookId INTEGER REFERENCES book(id) ON DELETE SET NULL,
                  title TEXT NOT NULL,
                  finishedAt DATETIME NOT NULL
                );
                CREATE INDEX finishedBook_at ON finishedBook(finishedAt);
                CREATE TRIGGER finishedBook_marked AFTER UPDATE OF finished ON book WHEN NEW.finished AND NOT OLD.finished
                BEGIN
                  INSERT INTO finishedBook(bookId, title, finishedAt)
                  VALUES (NEW.id, NEW.title, strftime('%Y-%m-%d %H:%M:%f', 'now'));
                END;
                """)
            // Each book's undo stack: the places a move left (in this book, or, for a book change, in the book left).
            try db.execute(sql: """
                CREATE TABLE undoEntry (
                  id INTEGER PRIMARY KEY AUTOINCREMENT,
                  bookId INTEGER NOT NULL REFERENCES book(id) ON DELETE CASCADE,
                  placeBookId INTEGER NOT NULL REFERENCES book(id) ON DELETE CASCADE,
                  fileId INTEGER NOT NULL REFERENCES bookFile(id) ON DELETE CASCADE,
                  offset INTEGER NOT NULL,
                  kind TEXT NOT NULL,
                  createdAt DATETIME NOT NULL,
                  CHECK (offset >= 0),
                  CHECK (kind IN ('seek', 'chapter', 'jump', 'bookmark', 'book'))
                );
                CREATE INDEX undoEntry_book ON undoEntry(bookId, id);
                CREATE INDEX undoEntry_placeBook ON undoEntry(placeBookId);
                CREATE INDEX undoEntry_file ON undoEntry(fileId);
                CREATE TRIGGER undoEntry_file BEFORE INSERT ON undoEntry
                WHEN NOT EXISTS (SELECT 1 FROM bookFile WHERE id = NEW.fileId AND bookId = NEW.placeBookId)
                BEGIN SELECT RAISE(ABORT, 'the undo entry names a file of another book'); END;
                """)
        }
        migrator.registerMigration("v11: loudness") { db in
            // Loudness normalisation, a book's setting (off by default), and its measured loudness: the integrated
            // loudness of its files in LUFS, or why it could not be measured (both NULL: not measured yet).
            try db.alter(table: "book") { t in
                t.add(column: "normalise", .boolean).notNull().defaults(to: false)
                t.add(column: "loudness", .double)
                t.add(column: "loudnessProblem", .text)
            }
        }
        migrator.registerMigration("v12: lyrics from tags") { db in
            // The words a file's tags carry (ID3 USLT/SYLT, Vorbis LYRICS, MP4 ©lyr), as the media reader gives them
            // (LRC or plain text): a table of its own, so that reading a book's files never reads its transcripts.
            try db.create(table: "fileLyrics") { t in
                t.primaryKey("fileId", .integer).references("bookFile", onDelete: .cascade)
                t.column("text", .text).notNull()
            }
            // Files imported before had their tags read without them: the next import reads them again (an unchanged
            // file is known by its size and modification time).
            try db.execute(sql: "UPDATE bookFile SET modified = NULL")
        }
        migrator.registerMigration("v13: files' totals from an index") { db in
            // A page's totals (files, files present, duration of each book) read from this index alone: the files'
            // rows of a page of 200 books are some 450 pages of the file, which with the books' pages no longer fit
            // in a reader's cache of 2 MB, so that every page was read from the file again at each call.
            try db.execute(sql: "CREATE INDEX bookFile_totals ON bookFile(bookId, available, duration)")
        }
        migrator.registerMigration("v14: skipped intros and outros") { db in
            // A book's setting (off by default): the seconds not played at the start and at the end of every file.
            try db.alter(table: "book") { t in
                t.add(column: "skipIntro", .double).notNull().defaults(to: 0)
                t.add(column: "skipOutro", .double).notNull().defaults(to: 0)
            }
        }
        migrator.registerMigration("v15: a book's speech compressor") { db in
            // The speech compressor, a book's setting (off by default).
            try db.alter(table: "book") { t in
                t.add(column: "compress", .boolean).notNull().defaults(to: false)
            }
        }
        migrator.registerMigration("v16: skip silence") { db in
            // A book's setting (off by default), and how much it shortens pauses, kept while it is off.
            try db.alter(table: "book") { t in
                t.add(column: "skipSilence", .boolean).notNull().defaults(to: false)
                t.add(column: "silenceThreshold", .double).notNull().defaults(to: 0.5)
                t.add(column: "silenceAmount", .double).notNull().defaults(to: 0.75)
            }
            // What skip silence saved of each listening session: listening time (µs), beside `listened`.
            try db.alter(table: "listeningSession") { t in
                t.add(column: "silence", .integer).notNull().defaults(to: 0).check { $0 >= 0 }
            }
        }
        migrator.registerMigration("v17: an import's new books make their search rows once") { db in
            // An import made a new book's search row twice: at its insert (with no files yet), and again from its row
            // of bookDeferred after its files. While the row of book 0 is in bookDeferred (an import's transaction
            // holds it: ``Library/importBooks(_:into:for:)``), a book inserted makes none of its own; deleting that
            // row makes nothing.
            try db.execute(sql: """
                DROP TRIGGER bookSearch_bookInserted;
                DROP TRIGGER bookDeferred_done;
                \(bookInsertedTrigger(remake: remakeOnce))
                \(deferredDoneTrigger(remake: remakeOnce))
                """)
        }
        migrator.registerMigration("v18: an import makes its books' search rows in one pass") { db in
            // v17's end of a deferred book made its search row when its row of bookDeferred was deleted: a trigger's
            // program for each book, in which the search index's reads and writes cost more than the book's own
            // writes (SQLite's FTS5 prepares a statement again for each). While an import's row of book 0 is in
            // bookDeferred, deleting a book's row makes nothing: the import makes the rows of all its books in a few
            // statements (``Library/importBooks(_:into:for:)``).
            try db.execute(sql: """
                DROP TRIGGER bookDeferred_done;
                \(deferredDoneTrigger(remake: remakeOnce, unlessImporting: true))
                """)
        }
        migrator.registerMigration("v19: a stop's place kept") { db in
            // Stop returns to the start of the chapter: the place before it is an undo step and a bookmark of their
            // own kind. SQLite changes no CHECK in place: the two tables are made again with the wider one.
            try widenCheck(db, table: "bookmark", from: "kind IN ('user', 'sleepTimer', 'unplug')",
                           to: "kind IN ('user', 'sleepTimer', 'unplug', 'stop')")
            try widenCheck(db, table: "undoEntry", from: "kind IN ('seek', 'chapter', 'jump', 'bookmark', 'book')",
                           to: "kind IN ('seek', 'chapter', 'jump', 'bookmark', 'book', 'stop')")
        }
        migrator.registerMigration("v20: series") { db in
            // A book's series and its place in it, as written ("2.5"): listed in series order (parts as numbers) by this index.
            try db.alter(table: "book") { t in
                t.add(column: "series", .text).check { length($0) <= Limits.name }
                t.add(column: "seriesPart", .text).check { length($0) <= 32 }
            }
            try db.execute(sql: """
                CREATE INDEX book_series
                ON book(series IS NULL, series COLLATE NOCASE, seriesPart IS NULL, CAST(seriesPart AS REAL), seriesPart COLLATE NOCASE,
                        title COLLATE NOCASE, id);
                DROP VIEW bookSearchText;
                \(searchTextView)
                DROP TRIGGER bookSearch_bookUpdated;
                \(bookUpdatedTrigger(remake: remakeOnce))
                """)
            // The files were read without these tags: the next import reads them again (an unchanged file is known by
            // its size and modification time).
            try db.execute(sql: "UPDATE bookFile SET modified = NULL")
        }
        return migrator
    }

    /// Makes `table` again with the CHECK `old` replaced by `new`, which accepts every row `old` did (SQLite's way to
    /// change a table's definition: a new table, the rows copied, the old one dropped, the new one renamed, and the
    /// old one's indexes and triggers made again). Run in a migration: foreign keys are checked at its end. The
    /// rename leaves the views and triggers that name the table as they are (`legacy_alter_table`): they name it
    /// again once it is renamed.
    static func widenCheck(_ db: Database, table: String, from old: String, to new: String) throws {
        guard let definition = try String.fetchOne(db, sql: "SELECT sql FROM sqlite_master WHERE type = 'table' AND name = ?",
                                                   arguments: [table]),
              definition.contains(old), let columns = definition.firstIndex(of: "(") else {
            throw DatabaseError(resultCode: .SQLITE_SCHEMA, message: "\(table) has no CHECK (\(old)) to widen")
        }
        let dependents = try String.fetchAll(db, sql: """
            SELECT sql FROM sqlite_master WHERE tbl_name = ? AND type IN ('index', 'trigger') AND sql IS NOT NULL
            """, arguments: [table])
        try db.execute(sql: "CREATE TABLE \(table)_widened " + definition[columns...].replacingOccurrences(of: old, with: new))
        try db.execute(sql: "INSERT INTO \(table)_widened SELECT * FROM \(table)")
        try db.execute(sql: "DROP TABLE \(table)")
        try db.execute(sql: "PRAGMA legacy_alter_table = ON")
        try db.execute(sql: "ALTER TABLE \(table)_widened RENAME TO \(table)")
        try db.execute(sql: "PRAGMA legacy_alter_table = OFF")
        for statement in dependents { try db.execute(sql: statement) }
    }

    /// The search rows and progress of the books an import wrote (those of bookDeferred but book 0), made in a few
    /// statements for them all: what v18's trigger leaves to the import. The progress of a book with no place that is
    /// not finished (a new book) is 0 whatever its files, and stored so already (a change of its place or of
    /// `finished` measures it): only the others are measured again.
    static let remakeDeferred: String = {
        let books = "SELECT bookId FROM bookDeferred WHERE bookId <> 0"
        let placed = "SELECT id FROM book WHERE id IN (\(books)) AND (finished OR positionFileId IS NOT NULL OR positionOffset <> 0)"
        return remakeOnce(books) + "\n" + measure(placed)
    }()

    /// v17's trigger of a new book: its search row, unless an import makes it (a row of book 0 in `bookDeferred`).
    static func bookInsertedTrigger(remake: Remake) -> String {
        """
        CREATE TRIGGER bookSearch_bookInserted AFTER INSERT ON book WHEN \(undeferred("0"))
        BEGIN \(remake("NEW.id")) END;
        """
    }

    /// v17's end of a deferred book: its search rows and progress made once (v7's, but for book 0). v18's
    /// (`unlessImporting`): not while the row of book 0 is there, an import's, which makes them for all its books.
    static func deferredDoneTrigger(remake: Remake, unlessImporting: Bool = false) -> String {
        """
        CREATE TRIGGER bookDeferred_done AFTER DELETE ON bookDeferred WHEN OLD.bookId <> 0\(unlessImporting ? " AND " + undeferred("0") : "")
        BEGIN \(remake("OLD.bookId")) \(measure("OLD.bookId")) END;
        """
    }

    /// The SQL that measures the stored progress of `books` again from `bookProgress` (see v7).
    static func measure(_ books: String) -> String {
        "UPDATE book SET progress = (SELECT progress FROM bookProgress WHERE id = book.id) WHERE id IN (\(books));"
    }

    /// The SQL that makes the search rows of `books` again (a list or a SELECT of book ids) from `bookSearchText`.
    typealias Remake = (_ books: String) -> String

    /// v7's: the view's row made twice, for `bookSearch` and for `bookTags`.
    static func remakeTwice(_ books: String) -> String {
        remake(books, tags: "SELECT id, author, album, composer, genre FROM bookSearchText WHERE id IN (\(books))")
    }

    /// v9's: the view's row made once, `bookTags` copied from the row of `bookSearch` just made.
    static func remakeOnce(_ books: String) -> String {
        remake(books, tags: "SELECT rowid, author, album, composer, genre FROM bookSearch WHERE rowid IN (\(books))")
    }

    private static func remake(_ books: String, tags: String) -> String {
        """
        DELETE FROM bookSearch WHERE rowid IN (\(books));
        DELETE FROM bookTags WHERE bookId IN (\(books));
        INSERT INTO bookSearch(rowid, title, author, narrator, series, album, composer, genre, files, notes)
        SELECT * FROM bookSearchText WHERE id IN (\(books));
        INSERT INTO bookTags \(tags);
        """
    }

    private static func undeferred(_ book: String) -> String { "NOT EXISTS (SELECT 1 FROM bookDeferred WHERE bookId = \(book))" }

    /// Every write that changes what a book's row says makes the row again: a book, its files, its bookmarks, its
    /// shelf or one above it. A deleted book's row goes (the view has none to make again). Files of a book in
    /// `bookDeferred` are skipped (see v7).
    static func searchTriggers(remake: Remake) -> String {
        let fileTags = ["title", "artist", "album", "albumArtist", "composer", "genre"]
        return """
            CREATE TRIGGER bookSearch_bookInserted AFTER INSERT ON book BEGIN \(remake("NEW.id")) END;
            CREATE TRIGGER bookSearch_bookDeleted AFTER DELETE ON book BEGIN \(remake("OLD.id")) END;
            CREATE TRIGGER bookSearch_bookUpdated AFTER UPDATE OF title, author, narrator, note, shelfId ON book
            WHEN NEW.title IS NOT OLD.title OR NEW.author IS NOT OLD.author OR NEW.narrator IS NOT OLD.narrator
              OR NEW.note IS NOT OLD.note OR NEW.shelfId IS NOT OLD.shelfId
            BEGIN \(remake("OLD.id, NEW.id")) END;
            CREATE TRIGGER bookSearch_fileInserted AFTER INSERT ON bookFile WHEN \(undeferred("NEW.bookId"))
            BEGIN \(remake("NEW.bookId")) END;
            CREATE TRIGGER bookSearch_fileDeleted AFTER DELETE ON bookFile WHEN \(undeferred("OLD.bookId"))
            BEGIN \(remake("OLD.bookId")) END;
            CREATE TRIGGER bookSearch_fileUpdated AFTER UPDATE OF bookId, \(fileTags.joined(separator: ", ")) ON bookFile
            WHEN (NEW.bookId IS NOT OLD.bookId OR \(fileTags.map { "NEW.\($0) IS NOT OLD.\($0)" }.joined(separator: " OR ")))
              AND \(undeferred("NEW.bookId"))
            BEGIN \(remake("OLD.bookId, NEW.bookId")) END;
            CREATE TRIGGER bookSearch_bookmarkInserted AFTER INSERT ON bookmark BEGIN \(remake("NEW.bookId")) END;
            CREATE TRIGGER bookSearch_bookmarkDeleted AFTER DELETE ON bookmark BEGIN \(remake("OLD.bookId")) END;
            CREATE TRIGGER bookSearch_bookmarkUpdated AFTER UPDATE OF bookId, title, note ON bookmark
            WHEN NEW.bookId IS NOT OLD.bookId OR NEW.title IS NOT OLD.title OR NEW.note IS NOT OLD.note
            BEGIN \(remake("OLD.bookId, NEW.bookId")) END;
            CREATE TRIGGER bookSearch_shelfUpdated AFTER UPDATE OF name, parentId ON shelf
            WHEN NEW.name IS NOT OLD.name OR NEW.parentId IS NOT OLD.parentId
            BEGIN \(remake("SELECT id FROM book WHERE shelfId IN (SELECT id FROM shelfTree WHERE top = NEW.id)")) END;
            """
    }

    /// v20's view of a book's search row: v7's, with the book's series before its shelves in the `series` column.
    static let searchTextView = """
        CREATE VIEW bookSearchText AS
        SELECT b.id, b.title,
          (SELECT group_concat(v, char(31)) FROM (SELECT b.author AS v UNION SELECT artist FROM bookFile WHERE bookId = b.id
                                                  UNION SELECT albumArtist FROM bookFile WHERE bookId = b.id)) AS author,
          b.narrator,
          nullif(ifnull(b.series || char(31), '') || ifnull((WITH RECURSIVE up(id, parentId, name) AS (
             SELECT id, parentId, name FROM shelf WHERE id = b.shelfId
             UNION ALL SELECT s.id, s.parentId, s.name FROM shelf s JOIN up ON s.id = up.parentId)
           SELECT group_concat(name, char(31)) FROM up), ''), '') AS series,
          (SELECT group_concat(v, char(31)) FROM (SELECT DISTINCT album AS v FROM bookFile WHERE bookId = b.id)) AS album,
          (SELECT group_concat(v, char(31)) FROM (SELECT DISTINCT composer AS v FROM bookFile WHERE bookId = b.id)) AS composer,
          (SELECT group_concat(v, char(31)) FROM (SELECT DISTINCT genre AS v FROM bookFile WHERE bookId = b.id)) AS genre,
          (SELECT group_concat(title, char(31)) FROM bookFile WHERE bookId = b.id) AS files,
          (SELECT group_concat(v, char(31)) FROM (SELECT b.note AS v UNION ALL SELECT title FROM bookmark WHERE bookId = b.id
                                                  UNION ALL SELECT note FROM bookmark WHERE bookId = b.id)) AS notes
        FROM book b;
        """

    /// The trigger of a book's own words changing (v9's; v20's with its series).
    static func bookUpdatedTrigger(remake: Remake) -> String {
        """
        CREATE TRIGGER bookSearch_bookUpdated AFTER UPDATE OF title, author, narrator, note, shelfId, series ON book
        WHEN NEW.title IS NOT OLD.title OR NEW.author IS NOT OLD.author OR NEW.narrator IS NOT OLD.narrator
          OR NEW.note IS NOT OLD.note OR NEW.shelfId IS NOT OLD.shelfId OR NEW.series IS NOT OLD.series
        BEGIN \(remake("OLD.id, NEW.id")) END;
        """
    }

    /// The triggers that keep each book's stored progress (see v7), and the one that makes a deferred book's search
    /// rows and progress once.
    static func progressTriggers(remake: Remake) -> String {
        """
            CREATE TRIGGER bookProgress_placeChanged AFTER UPDATE OF positionFileId, positionOffset, finished ON book
            WHEN NEW.positionFileId IS NOT OLD.positionFileId OR NEW.positionOffset <> OLD.positionOffset
              OR NEW.finished <> OLD.finished
            BEGIN \(measure("NEW.id")) END;
            CREATE TRIGGER bookProgress_fileInserted AFTER INSERT ON bookFile WHEN \(undeferred("NEW.bookId"))
            BEGIN \(measure("NEW.bookId")) END;
            CREATE TRIGGER bookProgress_fileDeleted AFTER DELETE ON bookFile WHEN \(undeferred("OLD.bookId"))
            BEGIN \(measure("OLD.bookId")) END;
            CREATE TRIGGER bookProgress_fileUpdated AFTER UPDATE OF duration, position ON bookFile
            WHEN (NEW.duration IS NOT OLD.duration OR NEW.position <> OLD.position) AND \(undeferred("NEW.bookId"))
            BEGIN \(measure("NEW.bookId")) END;
            CREATE TRIGGER bookDeferred_done AFTER DELETE ON bookDeferred
            BEGIN \(remake("OLD.bookId")) \(measure("OLD.bookId")) END;
            """
    }
}

/// Sizes the schema and the API enforce.
public enum Limits {
    /// Names and titles, in characters.
    public static let name = 1024
    /// Notes, in characters.
    public static let note = 100_000
}
