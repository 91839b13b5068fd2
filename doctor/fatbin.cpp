// The architectures compiled into an ELF file's CUDA fatbins, read from its
// .nv_fatbin section without the toolkit (cuobjdump --list-elf/--list-ptx
// gives the same list). A fatbin container is a 16-byte header (magic
// 0xBA55ED50, version, header size, size of what follows) and a run of
// entries; each entry's header has its kind (1 PTX, 2 ELF, i.e. SASS) at
// offset 0, its header size at 4, its padded payload size at 8 and the sm
// version at 28. Only these headers are read, never the payloads, so a
// 1.5 GB libtorch_cuda.so takes a few thousand small reads.
#include <algorithm>
#include <cstdint>
#include <cstring>
#include <fstream>

#include "fatbin.h"

namespace cudabench::doctor {
namespace {

template <typename T>
T get(const char* p) {
  T v;
  std::memcpy(&v, p, sizeof v);
  return v;
}

bool read_at(std::ifstream& f, std::uint64_t off, char* buf, std::size_t n) {
  f.clear();
  f.seekg(static_cast<std::streamoff>(off));
  return f.read(buf, static_cast<std::streamsize>(n)) && static_cast<std::size_t>(f.gcount()) == n;
}

constexpr std::uint32_t kFatbinMagic = 0xBA55ED50u;

// An ELF file's section table. Every size is checked against the file
// before anything is allocated or read: a corrupt header cannot ask for
// gigabytes.
struct SectionTable {
  std::string table;
  std::uint16_t entsize = 0, count = 0, names_index = 0;
  std::uint64_t file_size = 0;
  // Section i's offset and size; returns its name's offset.
  std::uint32_t section(int i, std::uint64_t* off, std::uint64_t* size) const {
    const char* s = table.data() + static_cast<std::size_t>(i) * entsize;
    *off = get<std::uint64_t>(s + 0x18);
    *size = get<std::uint64_t>(s + 0x20);
    return get<std::uint32_t>(s);
  }
  bool fits(std::uint64_t off, std::uint64_t size) const { return off <= file_size && size <= file_size - off; }
};

// Reads the table; "" or why not.
std::string read_section_table(std::ifstream& f, const std::string& path, SectionTable* t) {
  char eh[64] = {0};
  f.read(eh, sizeof eh);
  const auto got = f.gcount();
  if (got < 6 || std::memcmp(eh, "\x7f" "ELF", 4) != 0 || eh[4] != 2 || eh[5] != 1)
    return path + " is not a 64-bit little-endian ELF file";
  if (got < static_cast<std::streamsize>(sizeof eh)) return path + ": truncated ELF header";
  const auto shoff = get<std::uint64_t>(eh + 0x28);
  t->entsize = get<std::uint16_t>(eh + 0x3a);
  t->count = get<std::uint16_t>(eh + 0x3c);
  t->names_index = get<std::uint16_t>(eh + 0x3e);
  f.clear();
  f.seekg(0, std::ios::end);
  t->file_size = static_cast<std::uint64_t>(std::max<std::streamoff>(0, f.tellg()));
  if (t->entsize < 64 || t->count == 0 || t->names_index >= t->count) return path + " has no section table";
  const std::uint64_t table_size = static_cast<std::uint64_t>(t->entsize) * t->count;
  if (!t->fits(shoff, table_size)) return path + ": truncated section table";
  t->table.assign(table_size, '\0');
  if (!read_at(f, shoff, t->table.data(), t->table.size())) return path + ": truncated section table";
  return "";
}

// Where the .nv_fatbin section is; "" or why there is none.
std::string find_fatbin(std::ifstream& f, const std::string& path, std::uint64_t* fat_off, std::uint64_t* fat_size) {
  SectionTable t;
  if (std::string why = read_section_table(f, path, &t); !why.empty()) return why;
  std::uint64_t str_off = 0, str_size = 0;
  t.section(t.names_index, &str_off, &str_size);
  if (!t.fits(str_off, str_size)) return path + ": truncated section names";
  if (str_size > (16u << 20)) str_size = 16u << 20;
  std::string names(str_size, '\0');
  if (!read_at(f, str_off, names.data(), names.size())) return path + ": truncated section names";
  for (int i = 0; i < t.count; ++i) {
    const std::uint32_t name = t.section(i, fat_off, fat_size);
    if (name < names.size() && std::strcmp(names.c_str() + name, ".nv_fatbin") == 0)
      return t.fits(*fat_off, *fat_size) ? "" : path + ": .nv_fatbin runs past the end of the file";
  }
  return path + " has no .nv_fatbin section (no CUDA kernels)";
}

// One container's entries from `begin` to `end`: which sm each holds SASS
// (kind 2) or PTX (kind 1) for, counted once per container.
void count_entries(std::ifstream& f, std::uint64_t begin, std::uint64_t end, env::FatbinArchs* out) {
  std::map<int, int> sass, ptx;
  for (std::uint64_t e = begin; e + 32 <= end;) {
    char eh[32];
    if (!read_at(f, e, eh, sizeof eh)) break;
    const auto kind = get<std::uint16_t>(eh);
    const std::uint64_t header = get<std::uint32_t>(eh + 4);
    const std::uint64_t payload = get<std::uint32_t>(eh + 8);
    const int sm = static_cast<int>(get<std::uint32_t>(eh + 28));
    if (header < 32 || sm <= 0 || sm > 10000) break;
    if (kind == 2) sass[sm] = 1;
    if (kind == 1) ptx[sm] = 1;
    e += header + payload;
  }
  for (const auto& [sm, n] : sass) out->sass[sm] += n;
  for (const auto& [sm, n] : ptx) out->ptx[sm] += n;
}

}  // namespace

env::FatbinArchs read_fatbin_archs(const std::string& path) {
  env::FatbinArchs out;
  out.file = path;
  std::ifstream f(path, std::ios::binary);
  if (!f) {
    out.error = "cannot read " + path;
    return out;
  }
  std::uint64_t pos = 0, size = 0;
  out.error = find_fatbin(f, path, &pos, &size);
  if (!out.error.empty()) return out;
  const std::uint64_t end = pos + size;
  while (pos + 16 <= end) {
    char h[16];
    if (!read_at(f, pos, h, sizeof h)) break;
    if (get<std::uint32_t>(h) != kFatbinMagic) {
      pos += 8;  // containers are 8-byte aligned; skip padding
      continue;
    }
    const std::uint64_t header = get<std::uint16_t>(h + 6);
    const std::uint64_t body = get<std::uint64_t>(h + 8);
    if (header < 16 || body > end - pos) break;
    ++out.containers;
    count_entries(f, pos + header, pos + header + body, &out);
    pos += header + body;
  }
  if (out.containers == 0) out.error = path + ": .nv_fatbin holds no fatbin container";
  return out;
}

}  // namespace cudabench::doctor
