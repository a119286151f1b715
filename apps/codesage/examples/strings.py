def reverse_words(sentence):
    return " ".join(reversed(sentence.split()))


def is_palindrome(text):
    letters = [c.lower() for c in text if c.isalnum()]
    return letters == letters[::-1]


def celsius_to_fahrenheit(celsius):
    return celsius * 9 / 5 + 32
