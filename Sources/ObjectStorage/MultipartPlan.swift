import Crypto

/// How a file of `fileSize` bytes is cut into the parts of a multipart upload, under S3's rules
/// (S3 API reference, "Amazon S3 multipart upload limits"): parts 1…10 000, each at least 5 MiB
/// except the last, at most 5 GiB. Sans-I/O: sizes in, byte ranges out.
public struct MultipartPlan: Sendable, Equatable {
    public static let minimumPartSize: Int64 = 5 << 20
    public static let maximumPartSize: Int64 = 5 << 30
    public static let maximumPartCount = 10_000

    public struct Part: Sendable, Equatable {
        /// 1-based, as S3 numbers them.
        public var number: Int
        public var range: Range<Int64>
        public var size: Int64 { range.upperBound - range.lowerBound }
    }

    public let fileSize: Int64
    public let partSize: Int64

    public enum PlanError: Error, Equatable, CustomStringConvertible {
        case partSizeOutOfRange(Int64)
        case tooManyParts(fileSize: Int64, partSize: Int64)

        public var description: String {
            switch self {
            case .partSizeOutOfRange(let size):
                "part size \(size) is outside S3's limits (\(MultipartPlan.minimumPartSize) bytes to \(MultipartPlan.maximumPartSize))"
            case .tooManyParts(let fileSize, let partSize):
                "a file of \(fileSize) bytes in parts of \(partSize) needs more than \(MultipartPlan.maximumPartCount) parts; "
                    + "use parts of at least \(MultipartPlan.smallestPartSize(for: fileSize)) bytes"
            }
        }
    }

    /// An empty file is one empty part: S3 allows the last part (here the only one) to be any size.
    public init(fileSize: Int64, partSize: Int64) throws(PlanError) {
        guard (Self.minimumPartSize...Self.maximumPartSize).contains(partSize) else { throw .partSizeOutOfRange(partSize) }
        precondition(fileSize >= 0)
        guard Self.count(fileSize: fileSize, partSize: partSize) <= Self.maximumPartCount else {
            throw .tooManyParts(fileSize: fileSize, partSize: partSize)
        }
        self.fileSize = fileSize
        self.partSize = partSize
    }

    public var count: Int { Self.count(fileSize: fileSize, partSize: partSize) }

    public var parts: [Part] { (1...count).map(part) }

    /// Part `number` (1-based): `partSize` bytes, the last one what is left.
    public func part(_ number: Int) -> Part {
        precondition((1...count).contains(number))
        let start = Int64(number - 1) * partSize
        return Part(number: number, range: start..<min(fileSize, start + partSize))
    }

    static func count(fileSize: Int64, partSize: Int64) -> Int {
        fileSize == 0 ? 1 : Int((fileSize + partSize - 1) / partSize)
    }

    /// The smallest part size (a whole MiB) that fits `fileSize` into 10 000 parts.
    public static func smallestPartSize(for fileSize: Int64) -> Int64 {
        let mib: Int64 = 1 << 20
        let needed = (fileSize + Int64(maximumPartCount) - 1) / Int64(maximumPartCount)
        return max(minimumPartSize, (needed + mib - 1) / mib * mib)
    }

    /// The ETag S3 gives an object made by CompleteMultipartUpload: the MD5 of the parts' MD5s
    /// (binary, concatenated in part order), in hex, then `-` and the number of parts. AWS
    /// documents it only by example; RGW computes it the same way (seen on an `aws s3 cp`
    /// upload, and checked after every upload of the integration tests).
    public static func multipartETag(partMD5s: [[UInt8]]) -> String {
        var md5 = Insecure.MD5()
        for digest in partMD5s { md5.update(data: digest) }
        return SigV4Encoding.hex(md5.finalize()) + "-\(partMD5s.count)"
    }
}
