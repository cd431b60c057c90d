/// Natural filename order, as people number files: "2" before "10", case-insensitive.
///
/// ```swift
/// ["10.mp3", "2.mp3", "1.mp3"].sorted(by: NaturalOrder.areInIncreasingOrder)   // 1, 2, 10
/// ```
public enum NaturalOrder {
    public static func areInIncreasingOrder(_ a: String, _ b: String) -> Bool {
        let result = compare(a, b)
        return result != 0 ? result < 0 : a < b
    }

    /// -1, 0 or 1: runs of digits compare by value, everything else by lowercased characters.
    public static func compare(_ a: String, _ b: String) -> Int {
        var i = a.unicodeScalars.makeIterator(), j = b.unicodeScalars.makeIterator()
        var ca = i.next(), cb = j.next()
        while let x = ca, let y = cb {
            if isDigit(x) && isDigit(y) {
                var da = "", db = ""
                while let c = ca, isDigit(c) { da.unicodeScalars.append(c); ca = i.next() }
                while let c = cb, isDigit(c) { db.unicodeScalars.append(c); cb = j.next() }
                let ta = trimZeros(da), tb = trimZeros(db)
                if ta.count != tb.count { return ta.count < tb.count ? -1 : 1 }
                if ta != tb { return ta < tb ? -1 : 1 }
                continue
            }
            if x.isASCII && y.isASCII {
                // What lowercased() and String's order give for two ASCII characters, without making strings: an
                // import sorts its books' folders and titles by this, thousands of comparisons a second.
                let lx = asciiLowercased(x), ly = asciiLowercased(y)
                if lx != ly { return lx < ly ? -1 : 1 }
            } else {
                let lx = String(x).lowercased(), ly = String(y).lowercased()
                if lx != ly { return lx < ly ? -1 : 1 }
            }
            ca = i.next()
            cb = j.next()
        }
        if ca == nil && cb == nil { return 0 }
        return ca == nil ? -1 : 1
    }

    private static func asciiLowercased(_ c: Unicode.Scalar) -> UInt32 {
        c.value >= 65 && c.value <= 90 ? c.value + 32 : c.value
    }
    private static func isDigit(_ c: Unicode.Scalar) -> Bool { c.value >= 48 && c.value <= 57 }
    private static func trimZeros(_ s: String) -> Substring {
        let trimmed = s.drop { $0 == "0" }
        return trimmed.isEmpty ? "0" : trimmed
    }
}
