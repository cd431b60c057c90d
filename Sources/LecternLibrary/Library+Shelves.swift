import Foundation
import GRDB

// Shelves: a tree of named shelves holding books.
extension Library {
    public func shelves(in parent: Int64?) throws -> [Shelf] {
        try read { db in
            if let parent { _ = try Self.existingShelf(db, parent) }
            return try Shelf.filter(Column("parentId") == parent).order(Column("name").collating(.localizedCaseInsensitiveCompare)).fetchAll(db)
        }
    }

    public func allShelves() throws -> [Shelf] {
        try read { db in try Shelf.order(Column("name")).fetchAll(db) }
    }

    public func shelf(_ id: Int64) throws -> Shelf {
        try read { db in try Self.existingShelf(db, id) }
    }

    static func existingShelf(_ db: Database, _ id: Int64) throws -> Shelf {
        guard let shelf = try Shelf.fetchOne(db, key: id) else { throw LibraryError.notFound("no shelf \(id)") }
        return shelf
    }

    public func createShelf(named name: String, in parent: Int64?) throws -> Shelf {
        let name = try Self.checkName(name, "a shelf's name")
        return try write { db in
            if let parent { _ = try Self.existingShelf(db, parent) }
            var shelf = Shelf(id: nil, parentId: parent, name: name)
            try shelf.insert(db)
            return shelf
        }
    }

    /// The shelf at a `/`-separated path of names from the top ("Series/Discworld"), created as needed.
    public func shelf(atPath path: String) throws -> Int64? {
        let names = try path.split(separator: "/").map { try Self.checkName(String($0), "a shelf's name") }
        guard !names.isEmpty else { return nil }
        return try write { db in
            var parent: Int64? = nil
            for name in names {
                if let existing = try Shelf.filter(Column("parentId") == parent && Column("name") == name).fetchOne(db) {
                    parent = existing.id
                } else {
                    var shelf = Shelf(id: nil, parentId: parent, name: name)
                    try shelf.insert(db)
                    parent = shelf.id
                }
            }
            return parent
        }
    }

    public func renameShelf(_ id: Int64, to name: String) throws {
        let name = try Self.checkName(name, "a shelf's name")
        try write { db in
            var shelf = try Self.existingShelf(db, id)
            shelf.name = name
            try shelf.update(db)
        }
    }

    /// Moves a shelf under `parent` (nil = top level); never into itself or its descendants.
    public func moveShelf(_ id: Int64, to parent: Int64?) throws {
        try write { db in
            var shelf = try Self.existingShelf(db, id)
            if let parent {
                _ = try Self.existingShelf(db, parent)
                let descendants = try Self.descendantShelves(db, of: id)
                guard parent != id, !descendants.contains(parent) else {
                    throw LibraryError.invalidArgument("a shelf can't be moved into itself or one of its own shelves")
                }
            }
            shelf.parentId = parent
            try shelf.update(db)
        }
    }

    /// Deletes a shelf; one that holds books or shelves only when `recursive` (its books go too). Returns the books
    /// deleted with it.
    @discardableResult
    public func deleteShelf(_ id: Int64, recursive: Bool) throws -> [Int64] {
        try write { db in
            _ = try Self.existingShelf(db, id)
            let shelves = try Self.descendantShelves(db, of: id) + [id]
            let deleted = try Int64.fetchAll(db, Book.select(Column("id")).filter(shelves.contains(Column("shelfId"))))
            guard recursive || (shelves.count == 1 && deleted.isEmpty) else {
                throw LibraryError.invalidArgument("the shelf is not empty (\(shelves.count - 1) shelves, \(deleted.count) books): delete it recursively")
            }
            try Book.filter(shelves.contains(Column("shelfId"))).deleteAll(db)
            try Shelf.deleteOne(db, key: id)
            return deleted
        }
    }

    static func descendantShelves(_ db: Database, of id: Int64) throws -> [Int64] {
        try Int64.fetchAll(db, sql: """
            WITH RECURSIVE below(id) AS (SELECT id FROM shelf WHERE parentId = ?
                                         UNION ALL SELECT shelf.id FROM shelf JOIN below ON shelf.parentId = below.id)
            SELECT id FROM below
            """, arguments: [id])
    }
}
