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
                // By value, without making strings: past their leading zeros, the run with more digits is the larger,
                // else the first digit that differs says which.
                while let c = ca, c == "0" { ca = i.next() }
                while let c = cb, c == "0" { cb = j.next() }
                var first = 0
                while true {
                    let da = ca.flatMap { isDigit($0) ? $0 : nil }, db = cb.flatMap { isDigit($0) ? $0 : nil }
                    guard let da, let db else {
                        if da != nil { return 1 }
                        if db != nil { return -1 }
                        break
                    }
                    if first == 0 && da != db { first = da < db ? -1 : 1 }
                    ca = i.next()
                    cb = j.next()
                }
                if first != 0 { return first }
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
}
