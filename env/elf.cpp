#include "elf.h"

#include <algorithm>

#include "files.h"

namespace cudabench::env {

bool read_at(std::ifstream& f, std::uint64_t off, char* buf, std::size_t n) {
  f.clear();
  f.seekg(static_cast<std::streamoff>(off));
  return f.read(buf, static_cast<std::streamsize>(n)) && static_cast<std::size_t>(f.gcount()) == n;
}

std::uint32_t ElfSections::section(int i, std::uint64_t* off, std::uint64_t* size) const {
  const char* s = table.data() + static_cast<std::size_t>(i) * entsize;
  *off = elf_get<std::uint64_t>(s + 0x18);
  *size = elf_get<std::uint64_t>(s + 0x20);
  return elf_get<std::uint32_t>(s);
}
std::uint32_t ElfSections::type(int i) const {
  return elf_get<std::uint32_t>(table.data() + static_cast<std::size_t>(i) * entsize + 4);
}
std::uint32_t ElfSections::link(int i) const {
  return elf_get<std::uint32_t>(table.data() + static_cast<std::size_t>(i) * entsize + 0x28);
}

std::string read_elf_sections(std::ifstream& f, const std::string& path, ElfSections* t) {
  char eh[64] = {0};
  f.read(eh, sizeof eh);
  const auto got = f.gcount();
  if (got < 6 || std::memcmp(eh, "\x7f" "ELF", 4) != 0 || eh[4] != 2 || eh[5] != 1)
    return path + " is not a 64-bit little-endian ELF file";
  if (got < static_cast<std::streamsize>(sizeof eh)) return path + ": truncated ELF header";
  const auto shoff = elf_get<std::uint64_t>(eh + 0x28);
  t->entsize = elf_get<std::uint16_t>(eh + 0x3a);
  t->count = elf_get<std::uint16_t>(eh + 0x3c);
  t->names_index = elf_get<std::uint16_t>(eh + 0x3e);
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

ElfDynamic read_elf_dynamic(const std::string& path) {
  constexpr std::uint32_t kShtDynamic = 6;
  constexpr std::uint64_t kMaxDynamic = 1 << 20, kMaxStrings = 16u << 20;
  ElfDynamic out;
  std::ifstream f(path, std::ios::binary);
  ElfSections t;
  if (!f) return {"cannot read " + path, {}, {}, {}};
  if (out.error = read_elf_sections(f, path, &t); !out.error.empty()) return out;
  for (int i = 0; i < t.count; ++i) {
    if (t.type(i) != kShtDynamic || t.link(i) >= t.count) continue;
    std::uint64_t off = 0, size = 0, str_off = 0, str_size = 0;
    t.section(i, &off, &size);
    t.section(static_cast<int>(t.link(i)), &str_off, &str_size);
    if (!t.fits(off, size) || !t.fits(str_off, str_size) || size > kMaxDynamic || str_size > kMaxStrings)
      return {path + ": truncated dynamic section", {}, {}, {}};
    std::string dyn(size, '\0'), str(str_size, '\0');
    if (!read_at(f, off, dyn.data(), dyn.size()) || !read_at(f, str_off, str.data(), str.size()))
      return {path + ": truncated dynamic section", {}, {}, {}};
    for (std::size_t e = 0; e + 16 <= dyn.size(); e += 16) {
      const auto tag = elf_get<std::int64_t>(dyn.data() + e);
      const auto val = elf_get<std::uint64_t>(dyn.data() + e + 8);
      if (tag == 0) break;
      if ((tag != 1 && tag != 15 && tag != 29) || val >= str.size()) continue;
      const std::string s = str.c_str() + val;
      if (tag == 1) out.needed.push_back(s);
      auto& dirs = tag == 15 ? out.rpath : out.runpath;
      if (tag != 1)
        for (auto& d : split(s, ':')) dirs.push_back(d);
    }
    return out;
  }
  out.error = path + " has no dynamic section";
  return out;
}

}  // namespace cudabench::env
