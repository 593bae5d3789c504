//! The protobuf wire format, read: varints, tags, the four wire types
//! (varint, 64-bit, length-delimited, 32-bit) and their length checks.
//! [`fields`] splits the bytes of one message into its field occurrences;
//! what they mean is the caller's, helped by a schema of [`MessageDesc`]s
//! (`sp_schema` is SentencePiece's) that names them.
//!
//! The one reader of SentencePiece `.model` files: `sp_model` reads through
//! it, and so does Python's `tokensmith.formats._protobuf` (through
//! `_core.proto_fields`); writing stays in Python. Malformed input is an
//! [`Error::Format`] that names the field's path (`ModelProto.pieces[12].score`)
//! and the byte offset, counted from the start of the file. Groups (wire
//! types 3 and 4, long deprecated) are not read.

use crate::error::{Error, Result};

/// The wire types.
pub const VARINT: u8 = 0;
pub const I64: u8 = 1;
pub const LEN: u8 = 2;
pub const I32: u8 = 5;

/// What a field holds, as a schema declares it (a proto2 scalar type, or a
/// message named by its schema name).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    String,
    Bytes,
    Bool,
    Int32,
    Int64,
    Uint64,
    Enum,
    Float,
    Message(&'static str),
}

impl Kind {
    /// The kind's name: the scalar type's (`"string"`, `"int32"` ...) or the message's.
    pub const fn name(self) -> &'static str {
        match self {
            Kind::String => "string",
            Kind::Bytes => "bytes",
            Kind::Bool => "bool",
            Kind::Int32 => "int32",
            Kind::Int64 => "int64",
            Kind::Uint64 => "uint64",
            Kind::Enum => "enum",
            Kind::Float => "float",
            Kind::Message(name) => name,
        }
    }
}

/// A field's default: the value of a field the message does not hold
/// (`None` for repeated fields and messages).
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum DefaultValue {
    None,
    Str(&'static str),
    Bytes(&'static [u8]),
    Bool(bool),
    Int(i64),
    Float(f64),
}

/// One field of a message in a schema.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct FieldDesc {
    pub name: &'static str,
    pub number: u32,
    pub kind: Kind,
    pub repeated: bool,
    pub default: DefaultValue,
}

/// One message of a schema: its name and its fields.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct MessageDesc {
    pub name: &'static str,
    pub fields: &'static [FieldDesc],
}

impl MessageDesc {
    /// The field named `name`.
    pub fn field(&self, name: &str) -> Option<&'static FieldDesc> {
        self.fields.iter().find(|f| f.name == name)
    }

    /// The default of the field `name`. Panics when the message has no such
    /// field or its default is not a `bool` (a mistake in the caller's code).
    pub fn default_bool(&self, name: &str) -> bool {
        match self.field(name).map(|f| f.default) {
            Some(DefaultValue::Bool(b)) => b,
            other => panic!("{}.{name} has no bool default ({other:?})", self.name),
        }
    }

    /// The default of the integer or enum field `name` (panics as `default_bool`).
    pub fn default_int(&self, name: &str) -> i64 {
        match self.field(name).map(|f| f.default) {
            Some(DefaultValue::Int(i)) => i,
            other => panic!("{}.{name} has no integer default ({other:?})", self.name),
        }
    }

    /// The default of the string field `name` (panics as `default_bool`).
    pub fn default_str(&self, name: &str) -> &'static str {
        match self.field(name).map(|f| f.default) {
            Some(DefaultValue::Str(s)) => s,
            other => panic!("{}.{name} has no string default ({other:?})", self.name),
        }
    }
}

/// A field's value as the wire holds it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Value<'a> {
    Varint(u64),
    /// The 64 bits of a 64-bit value (little-endian on the wire).
    Fixed64(u64),
    /// The bytes of a length-delimited value (string, bytes, message, packed).
    Bytes(&'a [u8]),
    /// The 32 bits of a 32-bit value.
    Fixed32(u32),
}

/// One occurrence of a field in a message.
#[derive(Clone, Copy, Debug)]
pub struct Field<'a> {
    pub number: u64,
    pub value: Value<'a>,
    /// The offset of the field's tag, from the start of the file.
    pub start: usize,
    /// The offset just past the field.
    pub end: usize,
    /// For a field of the schema, how many of it came before in the message
    /// (the index of a repeated field's item); 0 for the others.
    pub index: usize,
    /// The schema's field of this number, if the schema has one.
    pub desc: Option<&'static FieldDesc>,
}

/// The error for a malformed `path` at byte `offset`.
pub fn error(path: &str, offset: usize, what: &str) -> Error {
    Error::Format(format!("{path} at byte {offset}: {what}"))
}

/// The path of a field of the message at `message`: `message.name`,
/// `message.name[index]` when repeated, `message.<field number>` when the
/// schema does not know it.
pub fn field_path(message: &str, number: u64, index: usize, desc: Option<&FieldDesc>) -> String {
    match desc {
        Some(d) if d.repeated => format!("{message}.{}[{index}]", d.name),
        Some(d) => format!("{message}.{}", d.name),
        None => format!("{message}.<field {number}>"),
    }
}

impl<'a> Field<'a> {
    /// The wire type of the field.
    pub fn wire(&self) -> u8 {
        match self.value {
            Value::Varint(_) => VARINT,
            Value::Fixed64(_) => I64,
            Value::Bytes(_) => LEN,
            Value::Fixed32(_) => I32,
        }
    }

    /// The schema's name of the field.
    pub fn name(&self) -> Option<&'static str> {
        self.desc.map(|d| d.name)
    }

    /// The field's path in the message at `message` (see [`field_path`]).
    pub fn path(&self, message: &str) -> String {
        field_path(message, self.number, self.index, self.desc)
    }

    fn expected(&self, message: &str, what: &str) -> Error {
        error(&self.path(message), self.start, what)
    }

    /// A length-delimited value: its bytes and their offset.
    pub fn bytes_at(&self, message: &str) -> Result<(&'a [u8], usize)> {
        match self.value {
            Value::Bytes(b) => Ok((b, self.end - b.len())),
            _ => Err(self.expected(message, "expected bytes")),
        }
    }

    /// The bytes of a `bytes` field.
    pub fn bytes(&self, message: &str) -> Result<&'a [u8]> {
        Ok(self.bytes_at(message)?.0)
    }

    /// The body of a message field and its offset.
    pub fn message(&self, message: &str) -> Result<(&'a [u8], usize)> {
        self.bytes_at(message)
            .map_err(|_| self.expected(message, "expected a message"))
    }

    /// The text of a `string` field.
    pub fn string(&self, message: &str) -> Result<&'a str> {
        let (b, at) = self
            .bytes_at(message)
            .map_err(|_| self.expected(message, "expected a string"))?;
        std::str::from_utf8(b).map_err(|e| {
            error(
                &self.path(message),
                at.saturating_add(e.valid_up_to()),
                "not valid UTF-8",
            )
        })
    }

    /// An integer or enum field, as protobuf casts its varint to `int64`.
    pub fn int(&self, message: &str) -> Result<i64> {
        match self.value {
            Value::Varint(v) => Ok(v as i64),
            _ => Err(self.expected(message, "expected an integer")),
        }
    }

    /// A `bool` field.
    pub fn bool(&self, message: &str) -> Result<bool> {
        Ok(self.int(message)? != 0)
    }

    /// A `float` field.
    pub fn float(&self, message: &str) -> Result<f32> {
        match self.value {
            Value::Fixed32(bits) => Ok(f32::from_bits(bits)),
            _ => Err(self.expected(message, "expected a 32-bit float")),
        }
    }
}

/// A position in a message's bytes; offsets in the file are `base + pos`.
struct Reader<'a> {
    data: &'a [u8],
    pos: usize,
    base: usize,
}

impl<'a> Reader<'a> {
    /// The offset in the file of `pos` (saturating: `base` comes from the caller).
    fn at(&self, pos: usize) -> usize {
        self.base.saturating_add(pos)
    }

    /// The varint at the position, for the field at `path()`.
    fn varint(&mut self, path: &dyn Fn() -> String) -> Result<u64> {
        let start = self.pos;
        let mut v: u64 = 0;
        let mut shift = 0u32;
        loop {
            let Some(&b) = self.data.get(self.pos) else {
                let what = "truncated varint (the file is cut short or corrupt)";
                return Err(error(&path(), self.at(start), what));
            };
            self.pos += 1;
            if shift < 64 {
                v |= u64::from(b & 0x7F) << shift;
            }
            if b < 0x80 {
                return Ok(v);
            }
            shift += 7;
            if shift >= 70 {
                return Err(error(
                    &path(),
                    self.at(start),
                    "varint longer than 10 bytes (corrupt file)",
                ));
            }
        }
    }

    /// The next `N` bytes (a fixed-size value).
    fn fixed<const N: usize>(&mut self, path: &dyn Fn() -> String, what: &str) -> Result<[u8; N]> {
        let Some(bytes) = self.data.get(self.pos..self.pos + N) else {
            return Err(error(&path(), self.at(self.pos), what));
        };
        self.pos += N;
        let mut out = [0u8; N];
        out.copy_from_slice(bytes);
        Ok(out)
    }

    /// A field's value of wire type `wire` (the field's tag is at `start`).
    fn value(&mut self, wire: u64, start: usize, path: &dyn Fn() -> String) -> Result<Value<'a>> {
        Ok(match wire {
            0 => Value::Varint(self.varint(path)?),
            1 => Value::Fixed64(u64::from_le_bytes(self.fixed(path, "truncated 64-bit value")?)),
            2 => {
                let n = self.varint(path)?;
                let left = self.data.len() - self.pos;
                if n > left as u64 {
                    let what =
                        format!("length {n} runs past the end ({left} bytes left; the file is truncated or corrupt)");
                    return Err(error(&path(), self.at(self.pos), &what));
                }
                let body = &self.data[self.pos..self.pos + n as usize];
                self.pos += n as usize;
                Value::Bytes(body)
            }
            5 => Value::Fixed32(u32::from_le_bytes(self.fixed(path, "truncated 32-bit value")?)),
            w => {
                let what = format!("unsupported wire type {w} (corrupt file)");
                return Err(error(&path(), self.at(start), &what));
            }
        })
    }
}

/// The fields of the message `data`, one at a time in the order of the
/// bytes, up to the first malformed one, whose error is the last item (a
/// reader that decodes each field as it comes reports the first error in
/// the file). `base` is the offset of `data` in the file and `message` its
/// path (for errors); `schema`, when given, names the fields (in errors, and
/// `Field::desc`).
pub fn fields<'a, 'm>(
    data: &'a [u8],
    base: usize,
    message: &'m str,
    schema: Option<&'static MessageDesc>,
) -> Fields<'a, 'm> {
    let known: &'static [FieldDesc] = schema.map_or(&[], |s| s.fields);
    Fields {
        r: Reader { data, pos: 0, base },
        message,
        known,
        seen: vec![0; known.len()],
        failed: false,
    }
}

/// All the fields of a message, and the error that stopped the reading if
/// one did (see [`fields`]).
pub fn split<'a>(
    data: &'a [u8],
    base: usize,
    message: &str,
    schema: Option<&'static MessageDesc>,
) -> (Vec<Field<'a>>, Option<Error>) {
    let mut out = Vec::new();
    for field in fields(data, base, message, schema) {
        match field {
            Ok(field) => out.push(field),
            Err(e) => return (out, Some(e)),
        }
    }
    (out, None)
}

/// The iterator of [`fields`].
pub struct Fields<'a, 'm> {
    r: Reader<'a>,
    message: &'m str,
    known: &'static [FieldDesc],
    /// How many of each of `known` were read.
    seen: Vec<usize>,
    failed: bool,
}

impl<'a> Iterator for Fields<'a, '_> {
    type Item = Result<Field<'a>>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.failed || self.r.pos >= self.r.data.len() {
            return None;
        }
        let field = next_field(&mut self.r, self.message, self.known, &mut self.seen);
        self.failed = field.is_err();
        Some(field)
    }
}

/// The field at the reader's position; `seen` counts the fields of `known` read so far.
fn next_field<'a>(
    r: &mut Reader<'a>,
    message: &str,
    known: &'static [FieldDesc],
    seen: &mut [usize],
) -> Result<Field<'a>> {
    let start = r.pos;
    let key = r.varint(&|| message.to_string())?;
    let number = key >> 3;
    if number == 0 {
        return Err(error(message, r.at(start), "field number 0 (corrupt file)"));
    }
    let slot = known.iter().position(|f| u64::from(f.number) == number);
    let desc = slot.map(|i| &known[i]);
    let index = slot.map_or(0, |i| seen[i]);
    let value = r.value(key & 7, start, &|| field_path(message, number, index, desc))?;
    if let Some(i) = slot {
        seen[i] += 1;
    }
    Ok(Field {
        number,
        value,
        start: r.at(start),
        end: r.at(r.pos),
        index,
        desc,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    const ITEM: MessageDesc = MessageDesc {
        name: "Item",
        fields: &[FieldDesc {
            name: "name",
            number: 1,
            kind: Kind::String,
            repeated: false,
            default: DefaultValue::Str(""),
        }],
    };
    const TOP: MessageDesc = MessageDesc {
        name: "Top",
        fields: &[
            FieldDesc {
                name: "items",
                number: 1,
                kind: Kind::Message("Item"),
                repeated: true,
                default: DefaultValue::None,
            },
            FieldDesc {
                name: "score",
                number: 2,
                kind: Kind::Float,
                repeated: false,
                default: DefaultValue::Float(0.0),
            },
        ],
    };

    fn all<'a>(
        data: &'a [u8],
        base: usize,
        message: &str,
        schema: Option<&'static MessageDesc>,
    ) -> Result<Vec<Field<'a>>> {
        fields(data, base, message, schema).collect()
    }

    fn message(e: Error) -> String {
        match e {
            Error::Format(m) => m,
            other => panic!("not a format error: {other:?}"),
        }
    }

    fn fail(data: &[u8], base: usize) -> String {
        message(all(data, base, "Top", Some(&TOP)).unwrap_err())
    }

    #[test]
    fn reads_each_wire_type() {
        let data = [
            0x08, 0x96, 0x01, // 1: varint 150
            0x11, 1, 2, 3, 4, 5, 6, 7, 8, // 2: 64-bit
            0x1A, 0x03, b'a', b'b', b'c', // 3: length-delimited
            0x25, 0x00, 0x00, 0x80, 0x3F, // 4: 32-bit, 1.0f32
        ];
        let got = all(&data, 10, "M", None).unwrap();
        let values: Vec<_> = got
            .iter()
            .map(|f| (f.number, f.wire(), f.value, f.start, f.end))
            .collect();
        assert_eq!(
            values,
            [
                (1, VARINT, Value::Varint(150), 10, 13),
                (2, I64, Value::Fixed64(0x0807060504030201), 13, 22),
                (3, LEN, Value::Bytes(b"abc"), 22, 27),
                (4, I32, Value::Fixed32(0x3F80_0000), 27, 32),
            ]
        );
        assert_eq!(got[3].float("M").unwrap(), 1.0);
        assert_eq!(got[2].string("M").unwrap(), "abc");
        assert_eq!(got[2].bytes_at("M").unwrap(), (&b"abc"[..], 24));
        assert_eq!(got[0].int("M").unwrap(), 150);
        assert!(all(&[], 0, "M", None).unwrap().is_empty());
    }

    #[test]
    fn a_ten_byte_varint_is_read_and_an_eleven_byte_one_refused() {
        let mut ten = vec![0x08];
        ten.extend([0xFF; 9]);
        ten.push(0x01);
        assert_eq!(all(&ten, 0, "M", None).unwrap()[0].value, Value::Varint(u64::MAX));
        assert_eq!(all(&ten, 0, "M", None).unwrap()[0].int("M").unwrap(), -1);
        let mut eleven = vec![0x08];
        eleven.extend([0x80; 10]);
        eleven.push(0x01);
        assert_eq!(
            message(all(&eleven, 5, "M", None).unwrap_err()),
            "M.<field 1> at byte 6: varint longer than 10 bytes (corrupt file)"
        );
        let mut long_key = vec![0x80; 10];
        long_key.push(0x01);
        assert_eq!(
            message(all(&long_key, 0, "M", None).unwrap_err()),
            "M at byte 0: varint longer than 10 bytes (corrupt file)"
        );
    }

    #[test]
    fn truncated_values_name_the_field_and_the_offset() {
        assert_eq!(
            fail(&[0x0A], 0),
            "Top.items[0] at byte 1: truncated varint (the file is cut short or corrupt)"
        );
        assert_eq!(
            fail(&[0x0A, 0x00, 0x0A, 0x05, b'a'], 100),
            "Top.items[1] at byte 104: length 5 runs past the end (1 bytes left; the file is truncated or corrupt)"
        );
        assert_eq!(fail(&[0x15, 0, 0], 7), "Top.score at byte 8: truncated 32-bit value");
        assert_eq!(
            fail(&[0x19, 0, 0, 0, 0, 0, 0, 0], 0),
            "Top.<field 3> at byte 1: truncated 64-bit value"
        );
        assert_eq!(
            fail(&[0x20, 0x80], 0),
            "Top.<field 4> at byte 1: truncated varint (the file is cut short or corrupt)"
        );
        assert_eq!(
            fail(&[0x80], 3),
            "Top at byte 3: truncated varint (the file is cut short or corrupt)"
        );
    }

    #[test]
    fn bad_wire_types_and_field_zero_are_refused() {
        for wire in [3u8, 4, 6, 7] {
            assert_eq!(
                fail(&[0x08, 0x01, (2 << 3) | wire], 0),
                format!("Top.score at byte 2: unsupported wire type {wire} (corrupt file)")
            );
        }
        assert_eq!(
            fail(&[0x08, 0x01, 0x02, 0x00], 40),
            "Top at byte 42: field number 0 (corrupt file)"
        );
    }

    #[test]
    fn nested_messages_keep_file_offsets() {
        // Top { items: [Item { name: "ab" }, Item { name: "\xff" }] } from byte 20 of a file
        let data = [0x0A, 0x04, 0x0A, 0x02, b'a', b'b', 0x0A, 0x03, 0x0A, 0x01, 0xFF];
        let top = all(&data, 20, "Top", Some(&TOP)).unwrap();
        assert_eq!(
            top.iter().map(|f| (f.name(), f.index)).collect::<Vec<_>>(),
            [(Some("items"), 0), (Some("items"), 1)]
        );
        let (body, at) = top[0].message("Top").unwrap();
        assert_eq!(at, 22);
        let path = top[0].path("Top");
        let item = all(body, at, &path, Some(&ITEM)).unwrap();
        assert_eq!((item[0].start, item[0].end), (22, 26));
        assert_eq!(item[0].string(&path).unwrap(), "ab");
        let (body, at) = top[1].message("Top").unwrap();
        let path = top[1].path("Top");
        assert_eq!(path, "Top.items[1]");
        let item = all(body, at, &path, Some(&ITEM)).unwrap();
        let e = message(item[0].string(&path).unwrap_err());
        assert_eq!(e, "Top.items[1].name at byte 30: not valid UTF-8");
        // a cut inside the nested message: its offset in the file
        let e = message(all(&body[..2], at, &path, Some(&ITEM)).unwrap_err());
        assert_eq!(
            e,
            "Top.items[1].name at byte 30: length 1 runs past the end (0 bytes left; the file is truncated or corrupt)"
        );
    }

    #[test]
    fn split_keeps_the_fields_before_the_error() {
        let data = [0x08, 0x01, 0x10, 0x02, 0x1A, 0x09, b'x'];
        let mut it = fields(&data, 0, "M", None);
        assert!(matches!(it.next(), Some(Ok(f)) if f.value == Value::Varint(1)));
        assert!(matches!(it.next(), Some(Ok(f)) if f.value == Value::Varint(2)));
        assert!(matches!(it.next(), Some(Err(_))));
        assert!(it.next().is_none());
        let (got, e) = split(&data, 0, "M", None);
        assert_eq!(
            got.iter().map(|f| f.value).collect::<Vec<_>>(),
            [Value::Varint(1), Value::Varint(2)]
        );
        assert!(e.is_some_and(|e| message(e).starts_with("M.<field 3> at byte 6: length 9 runs past the end")));
        let (got, e) = split(&[0x08, 0x01], 0, "M", None);
        assert!(got.len() == 1 && e.is_none());
    }

    #[test]
    fn typed_reads_name_what_they_expected() {
        let top = all(&[0x10, 0x01, 0x0A, 0x00], 0, "Top", Some(&TOP)).unwrap();
        assert_eq!(
            message(top[0].float("Top").unwrap_err()),
            "Top.score at byte 0: expected a 32-bit float"
        );
        assert_eq!(
            message(top[0].message("Top").unwrap_err()),
            "Top.score at byte 0: expected a message"
        );
        assert_eq!(
            message(top[1].int("Top").unwrap_err()),
            "Top.items[0] at byte 2: expected an integer"
        );
        assert_eq!(top[0].number, 2);
    }

    #[test]
    fn large_field_numbers_are_kept() {
        // field 2^32 (a varint key of 2^35): not cut to 32 bits (which would be field 0)
        let data = [0x80, 0x80, 0x80, 0x80, 0x80, 0x01, 0x00];
        assert_eq!(all(&data, 0, "M", None).unwrap()[0].number, 1 << 32);
        // offsets from a base near the end of the address space saturate
        let e = message(all(&[0x0A, 0x05], usize::MAX - 1, "M", None).unwrap_err());
        assert_eq!(
            e,
            format!(
                "M.<field 1> at byte {}: length 5 runs past the end (0 bytes left; the file is truncated or corrupt)",
                usize::MAX
            )
        );
    }

    #[test]
    fn schema_defaults() {
        assert!(TOP.field("score").is_some() && TOP.field("nope").is_none());
        assert_eq!(ITEM.default_str("name"), "");
        assert_eq!(Kind::Message("Item").name(), "Item");
    }
}
